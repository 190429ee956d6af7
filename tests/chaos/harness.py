"""What every chaos scenario shares: the cluster, a supervisor, a feeder of tasks, settling.

A scenario starts real module and sweeper processes (tests.support.cluster) on a broker of its
own (a vhost of the shared RabbitMQ, or a private node when the broker itself is the victim),
submits tasks (some scripted to fail through `_baton_faults`), injects its fault, waits for the
system to settle, and checks tests.chaos.invariants over every task and queue.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self
from urllib.parse import unquote, urlsplit

import pika

from common.engine.document import Task
from common.engine.states import TaskStatus
from tests.support.item_view import with_items
from tests.chaos.evidence import fault_footprint
from tests.chaos.invariants import ChaosReport, check_invariants
from tests.chaos.plans import ALL_QUEUES, CHAOS_FLOWS, MODULES, plan_tasks, scale
from tests.chaos.private_rabbit import list_queue_messages
from tests.support.cluster import STATE_DEADLINE, Cluster, Proc, wait_until
from tests.support.vhosts import rabbitmqctl

# --- the cluster -----------------------------------------------------------------------------------


@dataclass
class ChaosProc(Proc):
    env: dict[str, str] = field(default_factory=dict)
    offset: int = 0  # log size when last started: readiness is looked for after it
    ready: str = "module started"
    starts: int = 0


class ChaosCluster(Cluster):
    """tests.support.cluster.Cluster, started in parallel and restartable from a supervisor."""

    def __init__(
        self, workdir: Path, broker_url: str, env: dict[str, str] | None = None, ctl=None, mongo_url: str | None = None
    ):
        base = {
            "BATON_LEASE_SECONDS": "2",
            "BATON_REDELIVER_AFTER_SECONDS": "5",
            "BATON_SWEEP_INTERVAL_SECONDS": "0.3",
            "BATON_RELAY_GRACE_SECONDS": "1",
            "BATON_SHUTDOWN_GRACE_SECONDS": "3",
            # Fewer command children restart faster on two cores; the full run uses the default.
            "BATON_CONCURRENCY": scale("2", "4"),
        }
        super().__init__(workdir, broker_url, CHAOS_FLOWS, {**base, **(env or {})}, mongo_url=mongo_url)
        self._ctl = ctl  # runs rabbitmqctl against this cluster's broker (list_queues, ...)
        self.lock = threading.RLock()
        self.planned: dict[str, TaskStatus] = {}
        self.final_queues: dict[str, int] | None = None  # as the last settle() saw them
        self.db_path = self.store_url.removeprefix("sqlite:///")
        if not self.db_path.startswith("/"):
            self.db_path = "/" + self.db_path

    # processes

    def launch(self, name: str, kind: str = "module", module: str | None = None, registry: str | None = None,
               **env: str) -> ChaosProc:
        """Start a process without waiting for it (see wait_ready). `registry`
        ("package.module:attribute"): a module process serving that command registry."""
        if kind == "module" and registry is not None:
            args, ready = [sys.executable, "-m", "tests.support.run_registry", registry], "module started"
        elif kind == "module":
            args, ready = [sys.executable, "-m", f"modules.{module or name}"], "module started"
        else:
            args, ready = [sys.executable, "-m", "oss", "sweeper"], "sweeper started"
        proc = ChaosProc(name, args, self.workdir / f"{name}.log", env=dict(env), ready=ready)
        self.procs[name] = proc
        self._spawn(proc)
        return proc

    def _spawn(self, proc: ChaosProc) -> None:
        with self.lock:
            proc.offset = proc.log_path.stat().st_size if proc.log_path.exists() else 0
            with proc.log_path.open("a") as log:
                proc.popen = subprocess.Popen(
                    proc.args, cwd=Path(__file__).resolve().parents[2], env={**self.env, **proc.env},
                    stdout=log, stderr=subprocess.STDOUT,
                )
            proc.starts += 1

    def respawn(self, name: str) -> ChaosProc:
        proc = self.procs[name]
        self._spawn(proc)
        return proc

    def is_ready(self, proc: ChaosProc) -> bool:
        with proc.log_path.open("rb") as log:
            log.seek(proc.offset)
            return proc.ready.encode() in log.read()

    def wait_ready(self, names: Iterable[str] | None = None, timeout: float = 60) -> None:
        timeout = max(timeout, STATE_DEADLINE)  # a state: a start under load took minutes
        deadline = time.monotonic() + timeout
        for name in names or list(self.procs):
            proc = self.procs[name]
            while not self.is_ready(proc):
                if proc.popen.poll() is not None:
                    raise AssertionError(f"{name} exited with {proc.popen.returncode}:\n{proc.log_text()[-3000:]}")
                if time.monotonic() > deadline:
                    raise AssertionError(f"{name} not ready after {timeout}s:\n{proc.log_text()[-3000:]}")
                time.sleep(0.05)

    def start_standard(
        self, sweepers: int = 1, replicas: dict[str, int] | None = None, env: dict[str, dict[str, str]] | None = None
    ) -> None:
        """Every module (replicas as asked, `env` per module) and the sweepers; waits until ready."""
        for module in MODULES:
            for index in range((replicas or {}).get(module, 1)):
                name = module if index == 0 else f"{module}-{index + 1}"
                self.launch(name, module=module, **(env or {}).get(module, {}))
        for index in range(sweepers):
            self.launch("sweeper" if index == 0 else f"sweeper-{index + 1}", kind="sweeper")
        self.wait_ready()

    def module_names(self) -> list[str]:
        return [n for n, p in self.procs.items() if isinstance(p, ChaosProc) and p.ready == "module started"]

    def pid(self, name: str) -> int:
        return self.procs[name].popen.pid

    def kill9(self, name: str) -> int:
        with self.lock:
            popen = self.procs[name].popen
            if popen.poll() is not None:
                return 0
            popen.kill()
            popen.wait(timeout=30)
            return popen.pid

    # tasks

    def submit_planned(self, count: int, seed: int, task_type: str = "chaos_demo", plans: dict | None = None) -> list[str]:
        ids = []
        for plan, faults, expected in plan_tasks(count, seed, plans):
            task = self.submit(task_type, plan=plan, _baton_faults=faults)
            self.planned[task.TaskId] = expected
            ids.append(task.TaskId)
        return ids

    def submit_with(self, faults: list[dict], expected: TaskStatus, task_type: str = "chaos_demo", **params) -> str:
        task = self.submit(task_type, _baton_faults=faults, **params)
        self.planned[task.TaskId] = expected
        return task.TaskId

    def unsettled(self) -> int:
        """Tasks not final, or still owing the broker a message (one cheap query)."""
        if self.mongo_url:
            return mongo_tasks(self.mongo_url).count_documents({"$or": [
                {"TaskStatus": {"$nin": [0, 4, 5]}}, {"Outbox.0": {"$exists": True}},
                {"SweepAt": {"$type": "number"}},
            ]})  # fmt: skip
        with contextlib.closing(sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)) as db:
            return db.execute(
                "SELECT count(*) FROM tasks WHERE status NOT IN (0, 4, 5) OR outbox_due IS NOT NULL "
                "OR deadline IS NOT NULL"
            ).fetchone()[0]

    def busy_modules(self) -> list[str]:
        """Names of module processes holding a claimed step right now (from the store's leases)."""
        if self.mongo_url:
            running = {"Runs": {"$elemMatch": {"State": "running"}}}
            owners = [r.get("Owner") for d in mongo_tasks(self.mongo_url).find(running, {"Runs": 1})
                      for r in d.get("Runs", []) if r.get("State") == "running"]
        else:
            with contextlib.closing(sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)) as db:
                owners = [row[0] for row in db.execute(
                    "SELECT json_extract(r.value, '$.Owner') FROM tasks, json_each(tasks.doc, '$.Runs') AS r "
                    "WHERE deadline IS NOT NULL AND json_extract(r.value, '$.State') = 'running'"
                )]
        pids = {int(owner.split(":")[1]) for owner in owners if owner and owner.count(":") >= 2}
        return [n for n in self.module_names() if self.procs[n].popen.pid in pids and self.procs[n].popen.poll() is None]

    def running_runs(self, task_type: str) -> int:
        """Runs claimed and not concluded right now, over the tasks of `task_type` (their own
        Runs: an item over records keeps its run in its record)."""
        if self.mongo_url:
            return sum(1 for d in mongo_tasks(self.mongo_url).find({"TaskType": task_type, "Runs.State": "running"},
                                                                  {"Runs": 1})
                       for r in d.get("Runs", []) if r.get("State") == "running")
        with contextlib.closing(sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)) as db:
            return db.execute(
                "SELECT count(*) FROM tasks, json_each(tasks.doc, '$.Runs') AS r WHERE task_type = ? "
                "AND deadline IS NOT NULL AND json_extract(r.value, '$.State') = 'running'", (task_type,)
            ).fetchone()[0]

    def tasks(self) -> list[Task]:
        # The items of steps over records back in their steps: what the invariants read.
        return [with_items(self.store, task) for task in self.store.list_tasks(limit=1_000_000)]

    def queue_messages(self) -> dict[str, int]:
        """Ready + unacknowledged messages of every queue, as the broker counts them."""
        return self._ctl()

    def ready_messages(self) -> dict[str, int]:
        """Messages ready in each queue (AMQP passive declare: fast, but blind to unacked ones)."""
        return {q: self.broker.queue_depth(q) for q in ALL_QUEUES}

    def settle(
        self, timeout: float, expected_dead_letters: dict[str, int] | None = None, since: float | None = None
    ) -> float:
        """Wait until every task is final with nothing owed and no queue holds a ready message;
        returns the seconds from `since` (the end of the last fault; default now) until then.
        Then (not timed) wait until the broker also counts no unacknowledged message, so the
        invariant check sees the final queues."""
        began = time.monotonic() if since is None else since
        timeout = max(timeout, STATE_DEADLINE)  # a state; how long it took is reported, not asserted
        deadline = time.monotonic() + timeout
        expected = expected_dead_letters or {}

        def drained(counts: dict[str, int]) -> bool:
            return all(n == (expected.get(q, 0) if q.endswith(".dead") else 0) for q, n in counts.items())

        while self.unsettled() or not drained(self.ready_messages()):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"not settled after {timeout:g}s: {self.unsettled()} task(s), queues {self.ready_messages()}\n"
                    f"{self.logs()}"
                )
            time.sleep(0.1)
        settled = time.monotonic() - began
        while True:
            self.final_queues = self.queue_messages()
            if drained(self.final_queues) or time.monotonic() > deadline:
                return settled  # the invariant check reports whatever is left
            time.sleep(0.5)

    def check(self, expected_dead_letters: dict[str, int] | None = None, ids: Iterable[str] | None = None) -> ChaosReport:
        """The invariants over every task (or those of `ids`), the queues and the alarms."""
        wanted = set(ids) if ids is not None else set(self.planned)
        self.final_queues, queues = None, self.final_queues
        tasks = [t for t in self.tasks() if ids is None or t.TaskId in wanted]
        return check_invariants(
            tasks,
            accepted=wanted,
            queues=queues if queues is not None else self.queue_messages(),
            expected_dead_letters=expected_dead_letters,
            alarms=self.store.list_alarms(limit=1_000_000),
        )

    def deviations(self, ids: Iterable[str] | None = None) -> list[str]:
        """Tasks that ended other than planned with no fault footprint in their History.

        A lost attempt (worker killed, lease lapsed) counts as a failed attempt by design, so it
        may tip a task into a rollback; a different outcome WITHOUT such a footprint is a bug.
        """
        unexplained = []
        wanted = set(ids) if ids is not None else None
        for task in self.tasks():
            if wanted is not None and task.TaskId not in wanted:
                continue
            expected = self.planned.get(task.TaskId)
            if expected is None or task.TaskStatus is expected:
                continue
            if not any(fault_footprint(e) for e in task.History):
                unexplained.append(f"{task.TaskId}: planned {expected.name}, ended {task.TaskStatus.name}")
        return unexplained


@functools.cache
def mongo_tasks(url: str):  # type: ignore[no-untyped-def]
    """The tasks collection of a cluster's Mongo store, for the harness's own queries."""
    from common.store.factory import database_name
    from common.store.mongo.client import open_client

    return open_client(url)[database_name(url)]["tasks"]


def rabbitmqctl_shared(url: str) -> Callable[[], dict[str, int]]:
    """list_queues on the shared node, for the vhost of `url` (through the system wrapper)."""
    vhost = unquote(urlsplit(url).path.lstrip("/")) or "/"

    def run_ctl(*args: str) -> str:
        return rabbitmqctl(*args, timeout=STATE_DEADLINE)

    return lambda: list_queue_messages(run_ctl, vhost)


# --- fault injectors ---------------------------------------------------------------------------------


class Supervisor:
    """Restarts any watched process that died (kill -9, injected crash), as systemd would."""

    def __init__(self, cluster: ChaosCluster, names: Iterable[str]):
        self.cluster = cluster
        self.names = list(names)
        self.restarts: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-supervisor", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            for name in self.names:
                with self.cluster.lock:
                    popen = self.cluster.procs[name].popen
                    if popen.poll() is None:
                        continue
                    self.cluster.respawn(name)
                    self.restarts[name] += 1

    def wait_all_ready(self, timeout: float = 60) -> None:
        self.cluster.wait_ready(self.names, timeout)

    def wait_all_up(self) -> None:
        """Every watched process running and ready again (restarted if it died): a kill then hits
        a live one. On a loaded machine a restart took longer than a kill loop's period, and the
        next kill found its victim still dead."""

        def up(name: str) -> bool:
            proc = self.cluster.procs[name]
            return proc.popen.poll() is None and self.cluster.is_ready(proc)

        wait_until(lambda: all(up(name) for name in self.names), STATE_DEADLINE, "every watched process up")


class Feeder:
    """Submits planned tasks at a steady rate in the background, so faults hit a busy system."""

    def __init__(self, cluster: ChaosCluster, count: int, seconds: float, seed: int, task_type: str = "chaos_demo",
                 plans: dict | None = None, params: Callable[[int], dict] | None = None):
        self.cluster = cluster
        self.plans = plan_tasks(count, seed, plans)
        self.interval = seconds / max(1, count)
        self.task_type = task_type
        self.params = params or (lambda _index: {})  # the n-th task's own parameters (a name, a key)
        self.ids: list[str] = []
        self.finished_at = 0.0  # monotonic time of the last submission
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="chaos-feeder", daemon=True)

    def start(self) -> Feeder:
        self._thread.start()
        return self

    def join(self, timeout: float = 600) -> list[str]:
        self._thread.join(timeout)
        if self.error:
            raise self.error
        return self.ids

    def _run(self) -> None:
        try:
            next_at = time.monotonic()
            for index, (plan, faults, expected) in enumerate(self.plans):
                task = self.cluster.submit(self.task_type, plan=plan, _baton_faults=faults, **self.params(index))
                self.cluster.planned[task.TaskId] = expected
                self.ids.append(task.TaskId)
                self.finished_at = time.monotonic()
                next_at += self.interval
                time.sleep(max(0.0, next_at - time.monotonic()))
        except Exception as exc:  # noqa: BLE001  (a background thread: re-raised by join())
            self.error = exc


def delete_queues(url: str, queues: Iterable[str]) -> None:
    """Delete a previous scenario's queues on a vhost (whatever they hold)."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = connection.channel()
        for queue in queues:
            channel.queue_delete(queue)
    finally:
        connection.close()
