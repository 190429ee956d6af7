"""Vhosts of their own on the shared RabbitMQ, made cheaply.

Through the management API when the rabbitmq_management plugin answers (CI enables it): two HTTP
requests make a vhost, one deletes it, at the end of its test module.

Without it, `rabbitmqctl`: each call starts an Erlang VM (a second of CPU, several seconds on a
busy machine), and a run of the suite asks for about sixty vhosts. So one `rabbitmqctl eval`
makes a batch of vhosts (and grants the guest user on each) for this process to hand out, and
one more, at the end of the session, deletes every vhost the process made.

Every name carries the run's and the worker's id (tests.support.naming).
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator

from tests.support.naming import unique_name
from tests.support.process_tree import carrying
from tests.support.services import RABBITMQ_HOST, RABBITMQ_PORT, port_open, require, require_usable

BATCH = 8  # vhosts made by one rabbitmqctl call
CALL_ENV = "BATON_TEST_CTL_CALL"  # marks the processes of one rabbitmqctl call
ACTOR = '<<"baton-tests">>'

_management_probe: list[str | None] = []  # the API's base URL or None, probed once per process
_ready: list[str] = []  # made by rabbitmqctl, not handed out yet
_made: list[str] = []  # every vhost this process made by rabbitmqctl: deleted at the end


@contextlib.contextmanager
def rabbitmq_vhost(prefix: str = "baton-test") -> Iterator[str]:
    """A fresh vhost on the shared RabbitMQ, removed afterwards; yields its AMQP URL.
    `prefix` names it when the management API makes it (a batch made by rabbitmqctl is named
    `baton-test-...`)."""
    configured = any(os.environ.get(name) for name in ("BATON_TEST_RABBITMQ_HOST", "BATON_TEST_RABBITMQ_PORT"))
    require_usable(configured, port_open(RABBITMQ_HOST, RABBITMQ_PORT), f"no RabbitMQ at {RABBITMQ_HOST}:{RABBITMQ_PORT}")
    api = management_url()
    if api is None:
        require(shutil.which("rabbitmqctl") is not None, "rabbitmqctl not on PATH (vhosts per test)")
        vhost = _take_from_batch()
    else:
        vhost = unique_name(prefix)
        quoted = urllib.parse.quote(vhost, safe="")
        _request("PUT", f"{api}/api/vhosts/{quoted}")
        _request("PUT", f"{api}/api/permissions/{quoted}/guest", {"configure": ".*", "write": ".*", "read": ".*"})
    try:
        yield f"amqp://guest:guest@{RABBITMQ_HOST}:{RABBITMQ_PORT}/{vhost}"
    finally:
        if api is not None:
            delete_vhosts([vhost])
        # else: with every other vhost of the process, by delete_made_vhosts


def management_url() -> str | None:
    """The management API's base URL if it answers, else None."""
    if not _management_probe:
        url = os.environ.get("BATON_TEST_RABBITMQ_MANAGEMENT_URL", f"http://{RABBITMQ_HOST}:15672").rstrip("/")
        try:
            _request("GET", url + "/api/overview")
            _management_probe.append(url)
        except Exception:
            _management_probe.append(None)
    return _management_probe[0]


def delete_vhosts(vhosts: list[str]) -> None:
    """Delete these vhosts (one gone already is fine): an HTTP request each, or one rabbitmqctl
    call for all of them."""
    api = management_url()
    if api is not None:
        for vhost in vhosts:
            with contextlib.suppress(Exception):
                _request("DELETE", f"{api}/api/vhosts/{urllib.parse.quote(vhost, safe='')}")
    elif vhosts:
        deletes = ", ".join(f"catch rabbit_vhost:delete({_binary(v)}, {ACTOR})" for v in vhosts)
        with contextlib.suppress(Exception):
            _rabbitmqctl_eval(f"[{deletes}], ok.")


def delete_made_vhosts() -> None:
    """Every vhost this process made by rabbitmqctl, handed out or not (the root conftest's
    pytest_sessionfinish; at exit too, for a session that ended without it)."""
    made = list(_made)
    _made.clear()
    _ready.clear()
    delete_vhosts(made)


atexit.register(delete_made_vhosts)


def delete_run_vhosts(run: str) -> list[str]:
    """Every vhost named for the run `run` (tests.support.naming), whichever process made it: what
    a process killed before its teardown left (the session tether, tests.support.tether)."""
    api = management_url()
    try:
        if api is not None:
            request = urllib.request.Request(f"{api}/api/vhosts?columns=name")
            request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
            with urllib.request.urlopen(request, timeout=30) as answer:
                names = [v["name"] for v in json.load(answer)]
        elif shutil.which("rabbitmqctl") is not None:
            names = rabbitmqctl("-q", "list_vhosts", "name").split()
        else:
            return []
    except Exception:  # no broker to list: nothing was made on it either
        return []
    ours = [name for name in names if f"-{run}-" in name and name.startswith("baton-")]
    delete_vhosts(ours)
    return ours


def _take_from_batch() -> str:
    if not _ready:
        batch = [unique_name("baton-test") for _ in range(BATCH)]
        guest, every = _binary("guest"), _binary(".*")
        adds = ", ".join(
            f"rabbit_vhost:add({_binary(v)}, {ACTOR}), rabbit_auth_backend_internal:"
            f"set_permissions({guest}, {_binary(v)}, {every}, {every}, {every}, {ACTOR})"
            for v in batch
        )
        _made.extend(batch)  # before the call: a batch made in part is still deleted
        _rabbitmqctl_eval(f"{adds}, ok.")
        _ready.extend(batch)
    return _ready.pop(0)


def _binary(text: str) -> str:
    """An Erlang binary literal of one of our own names (or ".*"): nothing to escape."""
    assert all(c.isalnum() or c in "-_.*" for c in text), text
    return f'<<"{text}">>'


def _rabbitmqctl_eval(expression: str) -> None:
    rabbitmqctl("-q", "eval", expression)


def rabbitmqctl(*args: str, timeout: float = 120) -> str:
    """One rabbitmqctl call, in a session of its own: at its time-out the whole call goes (`su`,
    the script and the Erlang VM it starts). Killing only the first left the VM running, holding
    one of the few distribution ports every rabbitmqctl on the machine shares: enough of them and
    every later call failed ("Distribution failed ... nodistribution"). The range is widened too
    (eleven ports by default), so that calls other runs left hanging do not stop this one."""
    tag = uuid.uuid4().hex  # `su` runs the VM in a session of its own: found by this mark instead
    env = {"RABBITMQ_CTL_DIST_PORT_MIN": "35672", "RABBITMQ_CTL_DIST_PORT_MAX": "35871", **os.environ, CALL_ENV: tag}
    call = subprocess.Popen(["rabbitmqctl", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)  # fmt: skip
    try:
        out, err = call.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for pid in carrying(CALL_ENV, tag):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        call.communicate()
        raise
    if call.returncode != 0:
        raise subprocess.CalledProcessError(call.returncode, call.args, out, err)
    return out


def _request(method: str, url: str, body: dict | None = None) -> None:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, method=method, data=data)
    request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30):
        pass
