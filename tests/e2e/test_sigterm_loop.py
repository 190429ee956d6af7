"""SIGTERM to real baton processes with every background job on (sweeper, relay, webhooks,
schedules, retention jobs, the reconciler on a real MariaDB), run after run: each ends with its
documented code (OSS 143, killed by the signal it re-raises after its graceful stop; `baton
sweeper` and a module 0), never a crash (139), and leaves no lock or announcement behind."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster import REPO, STATE_DEADLINE, wait_until
from tests.support.mariadb import Sandbox, mariadb_sandbox
from tests.support.ports import free_port

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

RUNS = int(os.environ.get("BATON_TEST_SIGTERM_RUNS", "2"))  # make soak runs 10
EXIT_SIGTERM = -signal.SIGTERM  # 143 in a shell
FLOWS = """
version: 1
task_types:
  one:
    steps:
      - name: one
        normal: {module: mysql, command: noop, timeout: 5}
"""


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with mariadb_sandbox() as box:
        yield box


def environment(tmp_path: Path, rabbitmq_url: str, sandbox: Sandbox) -> dict[str, str]:
    flows = tmp_path / "flows.yaml"
    flows.write_text(FLOWS)
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}",
        "BATON_BROKER_URL": rabbitmq_url,
        "BATON_FLOWS_PATH": str(flows),
        "BATON_LOG_FORMAT": "json",
        "BATON_API_TOKENS": "ops:sigterm-test-token-1:operator",
        # Generous: a stop ends as soon as its threads do; a short grace failed the run on a
        # loaded machine ("did not stop in time") though nothing was wrong but the load.
        "BATON_SHUTDOWN_GRACE_SECONDS": "60",
        "BATON_SWEEP_INTERVAL_SECONDS": "0.05",
        "BATON_RELAY_GRACE_SECONDS": "0.1",
        "BATON_RECONCILE_INTERVAL_SECONDS": "0.05",
        "BATON_RECONCILE_APPLY": "true",
        "BATON_TASK_HISTORY_RETENTION_DAYS": "1",
        "BATON_RESOURCE_CLAIM_RETENTION_DAYS": "1",
        "BATON_WEBHOOK_URL": f"http://127.0.0.1:{free_port()}/hook",  # refused: retried in the background
        "BATON_MODULE_HEARTBEAT_SECONDS": "0.2",
        "BATON_METRICS_PORT": "0",
        **sandbox.env(),
    }


def rows(db: Path, sql: str) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        try:
            return conn.execute(sql).fetchall()
        except sqlite3.OperationalError:  # the table is not there yet
            return []


def held_locks(db: Path) -> list[str]:
    return [name for (name,) in rows(db, "SELECT name FROM locks WHERE name != 'baton-ping'")]


def stop(proc: subprocess.Popen, log: Path) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"did not stop after SIGTERM:\n{log.read_text()[-3000:]}") from None


def submit(port: int) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/tasks", data=b'{"task_type": "one", "parameters": {}}', method="POST",
        headers={"Authorization": "Bearer sigterm-test-token-1", "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=STATE_DEADLINE) as answer:
        assert answer.status in (200, 201, 202)


def ready(port: int) -> bool:
    with contextlib.suppress(OSError), urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
        return answer.status == 200
    return False


def test_oss_with_every_background_job_ends_by_its_own_sigterm_every_run(tmp_path, rabbitmq_url, sandbox) -> None:
    env, db = environment(tmp_path, rabbitmq_url, sandbox), tmp_path / "baton.db"
    for run in range(RUNS):
        port, log = free_port(), tmp_path / f"oss-{run}.log"
        with log.open("w") as out:
            proc = subprocess.Popen([sys.executable, "-m", "oss", "oss", "--port", str(port)], cwd=REPO, env=env,
                                    stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            wait_until(lambda: ready(port) or proc.poll() is not None, 60, "OSS ready")
            submit(port)  # the relay, the outbox timers and the webhook deliverer get work
            wait_until(lambda: {"sweeper", "reconciler"} <= set(held_locks(db)) or proc.poll() is not None, 60,
                       "the sweeper and the reconciler at work")  # fmt: skip
        finally:
            code = stop(proc, log)
        text = log.read_text()
        assert code == EXIT_SIGTERM, f"run {run}: exit {code}\n{text[-3000:]}"
        assert held_locks(db) == [], f"run {run}: left behind {held_locks(db)}"
        assert "reconciler stopped" in text and "did not stop in time" not in text, text[-3000:]


def test_a_sweeper_and_a_module_end_cleanly_on_sigterm_and_leave_nothing_held(tmp_path, rabbitmq_url, sandbox) -> None:
    env, db = environment(tmp_path, rabbitmq_url, sandbox), tmp_path / "baton.db"
    for run in range(max(2, RUNS // 3)):
        procs, starts = {}, (("sweeper", ["oss", "sweeper"], "sweeper started"), ("mysql", ["modules.mysql"], "module started"))
        for name, args, _ in starts:  # side by side: each takes seconds of imports and connecting
            log = tmp_path / f"{name}-{run}.log"
            with log.open("w") as out:
                procs[name] = (subprocess.Popen([sys.executable, "-m", *args], cwd=REPO, env=env, stdout=out,
                                                stderr=subprocess.STDOUT), log)  # fmt: skip
        for name, _, started in starts:
            proc, log = procs[name]
            wait_until(lambda p=proc, out=log, line=started: line in out.read_text() or p.poll() is not None, 60,
                       f"{name} started")  # fmt: skip
        wait_until(lambda: {"sweeper", "reconciler"} <= set(held_locks(db)), 60, "the sweeper and the reconciler at work")
        wait_until(lambda: rows(db, "SELECT 1 FROM modules") != [], 60, "the module announced")
        for name, (proc, log) in procs.items():
            code = stop(proc, log)
            assert code == 0, f"run {run}: {name} exit {code}\n{log.read_text()[-3000:]}"
        assert held_locks(db) == [], f"run {run}: left behind {held_locks(db)}"
        assert rows(db, "SELECT * FROM modules") == [], "a module's announcement left behind"


def test_baton_up_with_every_background_job_ends_cleanly_on_sigterm(tmp_path, sandbox) -> None:
    """Everything in one process (`baton up`, the in-process broker): exit 0, nothing held."""
    env, db = environment(tmp_path, "memory://", sandbox), tmp_path / "baton.db"
    for run in range(max(2, RUNS // 3)):
        port, log = free_port(), tmp_path / f"up-{run}.log"
        with log.open("w") as out:
            proc = subprocess.Popen([sys.executable, "-m", "oss", "up", "--no-demo", "--port", str(port)], cwd=REPO,
                                    env=env, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            wait_until(lambda: ready(port) or proc.poll() is not None, 120, "baton up ready")
            wait_until(lambda: {"sweeper", "reconciler"} <= set(held_locks(db)) or proc.poll() is not None, 60,
                       "the sweeper and the reconciler at work")  # fmt: skip
        finally:
            code = stop(proc, log)
        assert code == 0, f"run {run}: exit {code}\n{log.read_text()[-3000:]}"
        assert held_locks(db) == [], f"run {run}: left behind {held_locks(db)}"
