"""Real baton processes for end-to-end tests: modules and a sweeper as separate OS processes.

Each cluster gets its own flows.yaml in a temporary directory, its broker URL from the caller (a
vhost of its own on the shared RabbitMQ), and its own store: a SQLite file in the directory, or a
MongoDB URL from the caller (a database of its own on SecantusDB: tests.support.test_store).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from common.broker.factory import open_broker
from common.flows import load_flows
from common.engine.document import Task
from common.settings import load_settings
from tests.support.item_view import with_items
from common.engine.states import FINAL_STATUSES
from common.store.factory import open_store
from oss.services.tasks import TaskService

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Proc:
    name: str
    args: list[str]
    log_path: Path
    popen: subprocess.Popen | None = None
    ready: str = ""  # the log line that says it started; "" = guess from args (as before)
    cwd: Path = REPO  # the checkout it runs (another release's, in the rolling-upgrade test)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass
class Cluster:
    workdir: Path
    broker_url: str
    flows_text: str
    extra_env: dict[str, str] = field(default_factory=dict)
    procs: dict[str, Proc] = field(default_factory=dict)
    mongo_url: str | None = None  # None: a SQLite file of the cluster's own

    def __post_init__(self) -> None:
        self.flows_path = self.workdir / "flows.yaml"
        self.flows_path.write_text(self.flows_text)
        self.store_url = self.mongo_url or f"sqlite:///{self.workdir / 'baton.db'}"
        self.env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "BATON_BROKER_URL": self.broker_url,
            "BATON_STORE_URL": self.store_url,
            "BATON_FLOWS_PATH": str(self.flows_path),
            "BATON_FAULT_INJECTION": "1",
            "BATON_LEASE_SECONDS": "3",
            "BATON_REDELIVER_AFTER_SECONDS": "10",
            "BATON_SWEEP_INTERVAL_SECONDS": "0.3",
            "BATON_RELAY_GRACE_SECONDS": "1",
            "BATON_SHUTDOWN_GRACE_SECONDS": "5",
            "BATON_LOG_FORMAT": "json",
            **self.extra_env,
        }
        settings = load_settings(
            broker_url=self.broker_url, store_url=self.store_url, flows_path=str(self.flows_path),
            queue_type=self.extra_env.get("BATON_QUEUE_TYPE", "classic"),
        )
        self.store = open_store(self.store_url)
        self.broker = open_broker(self.broker_url, **settings.broker_options)
        self.service = TaskService(self.store, self.broker, load_flows(self.flows_path), settings)
        self.service.declare_queues()

    # --- processes ---------------------------------------------------------------------------

    def start_module(self, module: str, name: str | None = None, registry: str | None = None, checkout: Path = REPO,
                     **env: str) -> Proc:  # fmt: skip
        """`registry` ("package.module:attribute"): serve that command registry instead of the
        module's own (test stand-ins), through the same runtime. `checkout`: the code it runs."""
        args = [sys.executable, "-m", f"modules.{module}"]
        if registry is not None:
            args = [sys.executable, "-m", "tests.support.run_registry", registry]
        return self.start_process(name or module, args, env, ready="module started", cwd=checkout)

    def start_sweeper(self, name: str = "sweeper", checkout: Path = REPO, **env: str) -> Proc:
        return self.start_process(name, [sys.executable, "-m", "oss", "sweeper"], env, ready="sweeper started", cwd=checkout)

    def start_oss(self, port: int, name: str = "oss", checkout: Path = REPO, **env: str) -> Proc:
        """`baton oss`, the REST API, on `port`: ready once uvicorn listens (its own line)."""
        return self.start_process(name, [sys.executable, "-m", "oss", "oss", "--port", str(port)], env, ready="Uvicorn running on",
                           cwd=checkout)  # fmt: skip

    @contextlib.contextmanager
    def starting(self):
        """Processes started inside the block start side by side: the block returns once every
        one of them is ready (each takes seconds of imports and connecting on a busy machine)."""
        self._starting = []
        try:
            yield self
        finally:
            pending, self._starting = self._starting, None
        for proc, offset, ready in pending:
            self._await_ready(proc, offset, ready)

    _starting: list[tuple[Proc, int, str]] | None = None

    def start_process(self, name: str, args: list[str], env: dict[str, str], ready: str, cwd: Path | None = None) -> Proc:
        """Any command line as one of the cluster's processes (its log in the workdir, the
        cluster's environment with `env` over it), ready once `ready` shows in its log."""
        proc = self.procs.get(name) or Proc(name, args, self.workdir / f"{name}.log", ready=ready)
        self.procs[name] = proc
        if cwd is not None:
            proc.cwd = cwd
        offset = len(proc.log_text())
        pythonpath = os.pathsep.join([str(proc.cwd), *([env["PYTHONPATH"]] if "PYTHONPATH" in env else [])])
        with proc.log_path.open("a") as log:
            proc.popen = subprocess.Popen(
                args, cwd=proc.cwd, env={**self.env, **env, "PYTHONPATH": pythonpath}, stdout=log, stderr=subprocess.STDOUT
            )
        if self._starting is not None:
            self._starting.append((proc, offset, ready))
        else:
            self._await_ready(proc, offset, ready)
        return proc

    @staticmethod
    def _await_ready(proc: Proc, offset: int, ready: str) -> None:
        assert proc.popen is not None
        # Generous: a process's start (imports, broker, store) took over 30 s on a loaded machine.
        wait_until(lambda: ready in proc.log_text()[offset:] or proc.popen.poll() is not None, STATE_DEADLINE,
                   f"{proc.name} ready")
        if proc.popen.poll() is not None:
            raise AssertionError(f"{proc.name} exited with {proc.popen.returncode}:\n{proc.log_text()[-3000:]}")

    def restart(self, name: str) -> Proc:
        proc = self.procs[name]
        ready = proc.ready or ("module started" if "modules" in proc.args[-1] else "sweeper started")
        return self.start_process(name, proc.args, {}, ready=ready)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[name]
        assert proc.popen is not None
        proc.popen.send_signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            proc.popen.wait(timeout=STATE_DEADLINE)  # a graceful stop on a loaded machine

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.popen and proc.popen.poll() is None:
                proc.popen.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            if proc.popen:
                try:
                    proc.popen.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.popen.kill()
                    proc.popen.wait()
        self.service.close()  # its deferred mark-sent timers must not outlive the store
        self.broker.close()
        self.store.close()

    def logs(self) -> str:
        return "\n".join(f"==== {p.name}\n{p.log_text()[-4000:]}" for p in self.procs.values())

    def log_events(self, name: str) -> list[dict]:
        events = []
        for line in self.procs[name].log_text().splitlines():
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
        return events

    # --- tasks -------------------------------------------------------------------------------

    def submit(self, task_type: str, **parameters) -> Task:
        return self.service.submit(task_type, parameters).task

    def wait_final(self, task_id: str, timeout: float | None = None) -> Task:
        def final() -> bool:
            task = self.store.get(task_id)
            return task is not None and task.TaskStatus in FINAL_STATUSES and not task.Outbox

        try:
            wait_until(final, STATE_DEADLINE if timeout is None else timeout, f"task {task_id} final")
        except AssertionError:
            print(self.logs())
            print(self.store.get(task_id).model_dump_json(indent=1))
            raise
        # The items of a step over records back in the step: what every check reads.
        return with_items(self.store, self.store.get(task_id))


# The one deadline for a state a test waits for (a process ready, a step claimed, a task final):
# generous, for a machine at load 20-45 where a process's start took over 30 s. A test that
# passes never waits it out; it bounds only how long a broken one hangs.
STATE_DEADLINE = float(os.environ.get("BATON_TEST_STATE_DEADLINE", "300"))


def wait_until(condition, timeout: float, what: str, interval: float = 0.05) -> None:
    """Wait for a state. `timeout` is what the state takes on a quiet machine; the wait goes on
    to STATE_DEADLINE at least: a shorter deadline failed tests whose only fault was the
    machine's load, and only a broken test ever waits it out."""
    timeout = max(timeout, STATE_DEADLINE)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def commits(task: Task, event: str = "step_succeeded") -> dict[tuple[int, int], int]:
    """How many times each (step, phase) outcome was committed, from the task's history."""
    counted: dict[tuple[int, int], int] = {}
    for item in task.History:
        if item.Event == event:
            key = (item.Cursor, int(item.Phase))
            counted[key] = counted.get(key, 0) + 1
    return counted
