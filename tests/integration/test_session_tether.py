"""A test run stopped by SIGTERM (a CI time-out) leaves nothing behind: the session tether
(tests/support/tether.py). A pytest run of its own, with one xdist worker, starts what the suite's
tests start: a SecantusDB server (in a session of its own), a command runner with its
forkserver, a process that escaped its parent, a vhost on the shared RabbitMQ. It is stopped with
SIGTERM, or killed outright (SIGKILL): afterwards no process it started runs and its vhost is
gone. A private RabbitMQ node is not started there (minutes on a loaded machine): what the tether
needs of it, that its processes carry the run's mark, is checked on its environment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support.cluster import REPO, wait_until
from tests.support.process_tree import alive
from tests.support.tether import TETHER_ENV, marked, sweep
from tests.support.vhosts import management_url, rabbitmqctl

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
STATE_DEADLINE = 300  # starting a SecantusDB server, tearing down: states on a loaded machine

LEFT_RUNNING = '''
import json, os, subprocess, sys, threading

from common.runtime.runner import CommandRunner
from tests.support.secantus import secantus_server
from tests.support.vhosts import rabbitmq_vhost


def test_starts_everything_then_waits():
    with secantus_server("baton-tether") as server, rabbitmq_vhost() as url:
        runner = CommandRunner("tests.support.counted_commands:counted", size=1)  # never closed
        runner.start()
        escaped = subprocess.run(["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True)
        seen = {"mark": os.environ["BATON_TEST_TETHER"], "vhost": url.rsplit("/", 1)[1],
                "secantus": server.process.pid, "escaped": int(escaped.stdout)}
        with open(os.environ["TETHER_TEST_SEEN"] + ".part", "w") as out:
            json.dump(seen, out)
        os.rename(os.environ["TETHER_TEST_SEEN"] + ".part", os.environ["TETHER_TEST_SEEN"])
        threading.Event().wait()  # until the run is stopped
'''


def test_a_private_rabbitmq_node_carries_the_runs_mark():
    from tests.chaos.private_rabbit import PrivateRabbit, rabbitmq_bin_dir

    if rabbitmq_bin_dir() is None:
        pytest.skip("rabbitmq-server is not installed")
    node = PrivateRabbit(prefix="baton-tether")
    try:
        assert node.env()[TETHER_ENV] == os.environ[TETHER_ENV]  # beam.smp and its children inherit it
    finally:
        node.close()


def vhost_exists(name: str) -> bool:
    api = management_url()
    if api is not None:
        import base64
        import urllib.request

        request = urllib.request.Request(f"{api}/api/vhosts?columns=name")
        request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
        with urllib.request.urlopen(request, timeout=30) as answer:
            return name in [v["name"] for v in json.load(answer)]
    return name in rabbitmqctl("-q", "list_vhosts", "name").split()


def start_run(tmp_path) -> tuple[subprocess.Popen[bytes], dict]:
    """The run of LEFT_RUNNING (in a process group of its own), once it started everything; and
    what it started."""
    (tmp_path / "test_left_running.py").write_text(LEFT_RUNNING)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    seen_path = tmp_path / "seen.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "TETHER_TEST_SEEN": str(seen_path)}
    env.pop(TETHER_ENV, None)  # a run of its own, not a worker of this one
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("BATON_TEST_RUN_ID", None)
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "tests.support.tether", "-c", str(tmp_path / "pytest.ini"),
                            "-n", "1", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "--timeout", "0",
                            str(tmp_path / "test_left_running.py")],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           start_new_session=True)  # fmt: skip
    wait_until(lambda: seen_path.exists() or run.poll() is not None, STATE_DEADLINE, "the services started")
    assert seen_path.exists(), run.stdout.read().decode(errors="replace")[-3000:] if run.stdout else ""
    seen = json.loads(seen_path.read_text())
    seen["started"] = marked(seen["mark"].rsplit("-", 1)[0], with_workers=True)
    assert seen["secantus"] in seen["started"] and seen["escaped"] in seen["started"]
    return run, seen


def end_run(run: subprocess.Popen[bytes], seen: dict) -> None:
    if run.poll() is None:
        run.kill()
        run.wait()
    if seen:  # whatever the run left: not this test's to leave either
        sweep(seen["mark"].rsplit("-", 1)[0], with_workers=True)


def test_a_run_stopped_by_sigterm_leaves_no_process_and_no_vhost(tmp_path, rabbitmq_url):
    began = time.monotonic()
    run, seen = start_run(tmp_path)
    try:
        run.send_signal(signal.SIGTERM)  # the controller only, as a CI time-out stops `make test`
        signalled = time.monotonic()
        run.wait(timeout=STATE_DEADLINE)
        output = run.stdout.read().decode(errors="replace") if run.stdout else ""
        print(f"started in {signalled - began:.1f}s; torn down {time.monotonic() - signalled:.1f}s after SIGTERM")

        left = [pid for pid in seen["started"] if alive(pid)]
        assert not left, (left, output[-3000:])
        assert not [pid for pid in (seen["secantus"], seen["escaped"]) if alive(pid)]
        assert not vhost_exists(seen["vhost"]), output[-3000:]
    finally:
        end_run(run, seen)


def test_a_run_killed_outright_leaves_no_process_and_no_vhost(tmp_path, rabbitmq_url):
    """SIGKILL to the controller and its worker at once (a CI time-out whose grace ran out): no
    teardown runs, no sweep of theirs; their reapers end what they started."""
    run, seen = start_run(tmp_path)
    try:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()

        def nothing_left() -> bool:
            return not [pid for pid in seen["started"] if alive(pid)] and not vhost_exists(seen["vhost"])

        wait_until(nothing_left, STATE_DEADLINE, "the reapers' sweep")
        assert not alive(seen["secantus"])  # a server in a session of its own: no signal to the group reached it
    finally:
        end_run(run, seen)
