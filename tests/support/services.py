"""Reaching the machine's shared services without stepping on anyone else's toes.

A test that needs a service skips on a laptop without it, and FAILS under CI=true: CI must never
report green because the broker was down.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import os
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest

from tests.support.naming import unique_name

RABBITMQ_HOST = os.environ.get("BATON_TEST_RABBITMQ_HOST", "127.0.0.1")
RABBITMQ_PORT = int(os.environ.get("BATON_TEST_RABBITMQ_PORT", "5672"))


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(condition: bool, why: str) -> None:
    """Skip the test when `condition` is false, except in CI where that is a failure."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"required service missing under CI: {why}")
    pytest.skip(why)


def require_usable(configured: bool, usable: bool, why: str) -> None:
    """A service the run was told to use (an address in the environment, a package installed)
    but that does not work is a failure, never a skip: the run would look green without it.
    One nobody configured skips, as `require` does (and fails under CI=true)."""
    if usable:
        return
    if configured:
        pytest.fail(f"configured but unusable: {why}")
    require(False, why)


def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout):
        return True
    return False


def _rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", *args], check=True, capture_output=True, timeout=120)


def _erlang_binary(text: str) -> str:
    assert all(c.isalnum() or c in "-_.*" for c in text), text  # our own names and ".*" only
    return f'<<"{text}">>'


def _management_url() -> str | None:
    """The management API's base URL when the rabbitmq_management plugin answers there (CI
    enables it): a vhost is then two HTTP requests instead of an Erlang VM started by
    rabbitmqctl (a second of CPU each, several seconds on a busy machine)."""
    if _MANAGEMENT:
        return _MANAGEMENT[0]
    url = os.environ.get("BATON_TEST_RABBITMQ_MANAGEMENT_URL", f"http://{RABBITMQ_HOST}:15672").rstrip("/")
    try:
        _management("GET", url + "/api/overview")
        _MANAGEMENT.append(url)
    except Exception:
        _MANAGEMENT.append(None)
    return _MANAGEMENT[0]


_MANAGEMENT: list[str | None] = []  # probed once per process


def _management(method: str, url: str, body: dict | None = None) -> None:
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30):
        pass


def _add_vhost(vhost: str) -> None:
    api = _management_url()
    if api is not None:
        quoted = urllib.parse.quote(vhost, safe="")
        _management("PUT", f"{api}/api/vhosts/{quoted}")
        _management("PUT", f"{api}/api/permissions/{quoted}/guest", {"configure": ".*", "write": ".*", "read": ".*"})
        return
    # One rabbitmqctl call (one VM) for both, instead of add_vhost then set_permissions.
    name, user, all_ = _erlang_binary(vhost), _erlang_binary("guest"), _erlang_binary(".*")
    _rabbitmqctl("-q", "eval", f"rabbit_vhost:add({name}, {_ACTOR}), rabbit_auth_backend_internal:"
                 f"set_permissions({user}, {name}, {all_}, {all_}, {all_}, {_ACTOR}).")  # fmt: skip


_ACTOR = '<<"baton-tests">>'
_PENDING_DELETES: list[str] = []


def delete_vhosts_now(vhosts: list[str]) -> None:
    """Delete these vhosts (gone already is fine): one HTTP request each, or one rabbitmqctl
    call for all of them."""
    api = _management_url()
    if api is not None:
        for vhost in vhosts:
            with contextlib.suppress(Exception):
                _management("DELETE", f"{api}/api/vhosts/{urllib.parse.quote(vhost, safe='')}")
        return
    if vhosts:
        deletes = ", ".join(f"catch rabbit_vhost:delete({_erlang_binary(v)}, {_ACTOR})" for v in vhosts)
        with contextlib.suppress(Exception):
            _rabbitmqctl("-q", "eval", f"[{deletes}], ok.")


def delete_pending_vhosts() -> None:
    """The vhosts whose deletion was left for the end of the session (see rabbitmq_vhost)."""
    pending, _PENDING_DELETES[:] = list(_PENDING_DELETES), []
    delete_vhosts_now(pending)


atexit.register(delete_pending_vhosts)  # also when the session ends without its finish hook


@contextlib.contextmanager
def rabbitmq_vhost(prefix: str = "baton-test") -> Iterator[str]:
    """A fresh vhost on the shared RabbitMQ, deleted afterwards; yields its AMQP URL.

    Its name carries the run's and the worker's id (tests.support.naming). Without the
    management API its deletion waits for the end of the session (the root conftest's
    pytest_sessionfinish, or exit), where one rabbitmqctl call deletes every vhost of the
    process: each call starts an Erlang VM."""
    configured = any(os.environ.get(name) for name in ("BATON_TEST_RABBITMQ_HOST", "BATON_TEST_RABBITMQ_PORT"))
    require_usable(configured, port_open(RABBITMQ_HOST, RABBITMQ_PORT), f"no RabbitMQ at {RABBITMQ_HOST}:{RABBITMQ_PORT}")
    if _management_url() is None:
        require(shutil.which("rabbitmqctl") is not None, "rabbitmqctl not on PATH (vhosts per test)")
    vhost = unique_name(prefix)
    try:
        _add_vhost(vhost)
        yield f"amqp://guest:guest@{RABBITMQ_HOST}:{RABBITMQ_PORT}/{vhost}"
    finally:
        if _management_url() is not None:
            delete_vhosts_now([vhost])
        else:
            _PENDING_DELETES.append(vhost)
