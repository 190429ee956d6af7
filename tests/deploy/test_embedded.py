"""`baton up` (`make run`, and the image's default `up` role): OSS, every module, the sweeper, the
store and a broker in one process; a demo task; the API served until SIGTERM."""

from __future__ import annotations

import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy.support import (
    ENTRYPOINT,
    REPO,
    TOKEN,
    TOKEN_LINE,
    TOKENS,
    URL_LINE,
    clean_env,
    http,
)
from tests.support.cluster import STATE_DEADLINE, wait_until
from tests.support.ports import free_port

pytestmark = pytest.mark.slow


@dataclass
class Up:
    popen: subprocess.Popen
    out: Path
    err: Path

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    def errors(self) -> str:
        return self.err.read_text(errors="replace")

    def wait_url(self, timeout: float = 60) -> str:
        found: list[str] = []

        def up() -> bool:
            match = URL_LINE.search(self.output())
            if match:
                found.append(match.group(1))
            return bool(match) or self.popen.poll() is not None

        wait_until(up, timeout, "the URL line")
        assert found, f"exited {self.popen.returncode}:\n{self.output()}\n{self.errors()}"
        return found[0]

    def stop(self, timeout: float = STATE_DEADLINE) -> int:
        self.popen.send_signal(signal.SIGTERM)
        return self.popen.wait(timeout=timeout)


def start_up(workdir: Path, *args: str, **settings: str) -> Up:
    out, err = workdir / "up.out", workdir / "up.err"
    env = clean_env(BATON_FLOWS_PATH=str(REPO / "flows.yaml"), **settings)
    with out.open("w") as stdout, err.open("w") as stderr:
        popen = subprocess.Popen(
            [str(ENTRYPOINT), "up", *args], cwd=workdir, env=env, stdout=stdout, stderr=stderr
        )
    return Up(popen, out, err)


def demo_tasks(base: str, token: str) -> list[dict]:
    status, page = http("GET", f"{base}/api/v1/tasks?task_type=demo", token=token)
    assert status == 200, page
    return page["items"]


def test_up_with_nothing_installed_runs_the_demo_and_serves_until_sigterm(tmp_path):
    port = free_port()
    # RabbitMQ configured but not there (nothing listens on a free port): the in-process
    # broker, and it says so
    up = start_up(
        tmp_path,
        BATON_OSS_PORT=str(port),
        BATON_BROKER_URL=f"amqp://guest:guest@127.0.0.1:{free_port()}/",
    )
    try:
        base = up.wait_url()
        output = up.output()
        assert base == f"http://127.0.0.1:{port}"
        assert "using the in-process broker instead" in output and "broker:   in-process" in output
        # the progress, then the task
        assert "task_success" in output and "status 0 (SUCCESS)" in output
        token = TOKEN_LINE.search(output).group(1)  # made up for this run, shown once
        assert output.count(token) == 2  # the token line and the curl example
        tasks = demo_tasks(base, token)
        assert [t["TaskStatusName"] for t in tasks] == ["SUCCESS"]
        assert http("GET", f"{base}/healthz", token=None)[0] == 200
        assert http("GET", f"{base}/api/v1/tasks", token="wrong-token-0123456789")[0] == 401
        assert (tmp_path / "var" / "baton.db").exists()  # the default store, made where it runs
    finally:
        code = up.stop()
    # Stopped by its own shutdown (exit 0 and its last line), not killed: how long that took
    # depends on the machine's load, not on baton.
    assert code == 0, f"{up.output()}\n{up.errors()}"
    assert up.output().rstrip().endswith("baton stopped")
    assert "Traceback" not in up.errors(), up.errors()


@pytest.mark.rabbitmq
def test_up_uses_rabbitmq_when_it_answers_and_configured_tokens(rabbitmq_url, tmp_path):
    up = start_up(
        tmp_path,
        "--port",
        str(free_port()),
        BATON_BROKER_URL=rabbitmq_url,
        BATON_API_TOKENS=TOKENS,
        BATON_STORE_URL=f"sqlite:///{tmp_path / 'up.db'}",
    )
    try:
        base = up.wait_url()
        output = up.output()
        assert "broker:   amqp://guest:***@" in output
        # tokens configured: none made up, and theirs never printed
        assert TOKEN_LINE.search(output) is None and TOKEN not in output
        assert [t["TaskStatusName"] for t in demo_tasks(base, TOKEN)] == ["SUCCESS"]
    finally:
        code = up.stop()
    assert code == 0, f"{up.output()}\n{up.errors()}"


def test_a_bad_setting_stops_up_at_once_naming_it(tmp_path):
    up = start_up(tmp_path, BATON_CONCURRENCY="0", BATON_OSS_PORT=str(free_port()))
    assert up.popen.wait(timeout=STATE_DEADLINE) == 2
    assert "BATON_CONCURRENCY" in up.errors() and "(got '0')" in up.errors()


def test_a_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        up = start_up(tmp_path, "--port", str(taken.getsockname()[1]))
        assert up.popen.wait(timeout=STATE_DEADLINE) == 2
    assert "cannot listen on 127.0.0.1" in up.errors() and "BATON_OSS_PORT" in up.errors()
