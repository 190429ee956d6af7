"""What every chaos scenario shares: the cluster, a supervisor, task plans, settling, the report.

A scenario starts real module and sweeper processes (tests.support.cluster) on a broker of its
own (a vhost of the shared RabbitMQ, or a private node when the broker itself is the victim),
submits tasks (some scripted to fail through `_baton_faults`), injects its fault, waits for the
system to settle, and checks tests.chaos.invariants over every task and queue.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
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

from common.models import Task
from common.queues import dead_letter_queue
from common.statuses import TaskStatus
from tests.chaos.invariants import ChaosReport, check_invariants
from tests.support.cluster import Cluster, Proc

FULL = os.environ.get("BATON_CHAOS", "").lower() == "full"
MODULES = ("resource", "mysql", "monitor")
QUEUES = (*MODULES, "baton.alarms")
ALL_QUEUES = (*QUEUES, *(dead_letter_queue(q) for q in QUEUES))


def scale(reduced, full):
    """The reduced figure in the normal test run, the full one under BATON_CHAOS=full."""
    return full if FULL else reduced


# Retries differ per step so that one rule on the shared `noop` command fails a chosen step:
# a rule failing attempts 1..t fails step a when t > 3, step b when t > 2, step c when t > 1.
CHAOS_FLOWS = """
version: 1
defaults:
  timeout: 5
  retry: 1
  backoff: {initial: 0.05, max: 0.2, multiplier: 2, jitter: 0.2}
task_types:
  chaos_demo:
    description: the demo flow (three no-op steps, one per module, each with a rollback)
    steps:
      - name: demo_a
        normal:   {module: resource, command: noop, retry: 3}
        rollback: {module: resource, command: noop_rollback, retry: 1}
      - name: demo_b
        normal:   {module: mysql, command: noop, retry: 2}
        rollback: {module: mysql, command: noop_rollback, retry: 1}
      - name: demo_c
        normal:   {module: monitor, command: noop, retry: 1}
        rollback: {module: monitor, command: noop_rollback, retry: 2}
  chaos_hang:
    description: one step whose command may hang; timeout 2 s, 2 retries
    steps:
      - name: hang
        normal:   {module: mysql, command: noop, timeout: 2, retry: 2,
                   backoff: {initial: 0.1, max: 0.2, multiplier: 2, jitter: 0}}
        rollback: {module: mysql, command: noop_rollback, timeout: 2, retry: 2}
  chaos_slow:
    description: one step on resource whose first attempt hangs until its timeout
    steps:
      - name: slow
        normal:   {module: resource, command: noop, timeout: 3, retry: 2}
        rollback: {module: resource, command: noop_rollback, retry: 2}
"""


def fail(times: int | None = None, phase: str = "normal") -> dict:
    command = "noop" if phase == "normal" else "noop_rollback"
    rule = {"command": command, "action": "fail", "phase": phase}
    if times is not None:
        rule["times"] = times
    return rule


def crash(at: str, phase: str = "normal") -> dict:
    return {"command": "noop" if phase == "normal" else "noop_rollback", "action": "crash", "at": at, "phase": phase}


# name -> (share of tasks, faults, the status the plan leads to without any other fault)
PLANS: dict[str, tuple[float, list[dict], TaskStatus]] = {
    "ok": (0.58, [], TaskStatus.SUCCESS),
    "retry": (0.10, [fail(1)], TaskStatus.SUCCESS),  # every step fails once, then works
    "fail_c": (0.08, [fail(2)], TaskStatus.ROLLED_BACK),  # rolls back c, b, a
    "fail_b": (0.08, [fail(3)], TaskStatus.ROLLED_BACK),  # rolls back b, a
    "fail_a": (0.08, [fail()], TaskStatus.ROLLED_BACK),  # rolls back a
    "rb_fail": (0.08, [fail(2), fail(2, "rollback")], TaskStatus.ROLLBACK_FAILED),  # c undone, b's undo fails
}


def plan_tasks(count: int, seed: int) -> list[tuple[str, list[dict], TaskStatus]]:
    """A deterministic mix of plans with each plan present at least once when count allows."""
    rng = random.Random(seed)
    names = list(PLANS)
    picks = names[: min(count, len(names))]
    picks += rng.choices(names, weights=[PLANS[n][0] for n in names], k=count - len(picks))
    rng.shuffle(picks)
    return [(name, PLANS[name][1], PLANS[name][2]) for name in picks]


# --- the cluster -----------------------------------------------------------------------------------


@dataclass
class ChaosProc(Proc):
    env: dict[str, str] = field(default_factory=dict)
    offset: int = 0  # log size when last started: readiness is looked for after it
    ready: str = "module started"
    starts: int = 0


class ChaosCluster(Cluster):
    """tests.support.cluster.Cluster, started in parallel and restartable from a supervisor."""

    def __init__(self, workdir: Path, broker_url: str, env: dict[str, str] | None = None, ctl=None):
        base = {
            "BATON_LEASE_SECONDS": "2",
            "BATON_REDELIVER_AFTER_SECONDS": "5",
            "BATON_SWEEP_INTERVAL_SECONDS": "0.3",
            "BATON_RELAY_GRACE_SECONDS": "1",
            "BATON_SHUTDOWN_GRACE_SECONDS": "3",
            # Fewer command children restart faster on two cores; the full run uses the default.
            "BATON_CONCURRENCY": scale("2", "4"),
        }
        super().__init__(workdir, broker_url, CHAOS_FLOWS, {**base, **(env or {})})
        self._ctl = ctl  # runs rabbitmqctl against this cluster's broker (list_queues, ...)
        self.lock = threading.RLock()
        self.planned: dict[str, TaskStatus] = {}
        self.final_queues: dict[str, int] | None = None  # as the last settle() saw them
        self.db_path = self.store_url.removeprefix("sqlite:///")
        if not self.db_path.startswith("/"):
            self.db_path = "/" + self.db_path

    # processes

    def launch(self, name: str, kind: str = "module", module: str | None = None, **env: str) -> ChaosProc:
        """Start a process without waiting for it (see wait_ready)."""
        if kind == "module":
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
        return [n for n, p in self.procs.items() if isinstance(p, ChaosProc) and "modules." in p.args[-1]]

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

    def submit_planned(self, count: int, seed: int, task_type: str = "chaos_demo") -> list[str]:
        ids = []
        for plan, faults, expected in plan_tasks(count, seed):
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
        with contextlib.closing(sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)) as db:
            return db.execute(
                "SELECT count(*) FROM tasks WHERE status NOT IN (0, 4, 5) OR outbox_due IS NOT NULL "
                "OR deadline IS NOT NULL"
            ).fetchone()[0]

    def busy_modules(self) -> list[str]:
        """Names of module processes holding a claimed step right now (from the store's leases)."""
        with contextlib.closing(sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)) as db:
            owners = [row[0] for row in db.execute(
                "SELECT json_extract(doc, '$.Active.Owner') FROM tasks "
                "WHERE deadline IS NOT NULL AND json_extract(doc, '$.Active.State') = 'running'"
            )]
        pids = {int(owner.split(":")[1]) for owner in owners if owner and owner.count(":") >= 2}
        return [n for n in self.module_names() if self.procs[n].popen.pid in pids and self.procs[n].popen.poll() is None]

    def tasks(self) -> list[Task]:
        return self.store.list_tasks(limit=1_000_000)

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


def timeline(task: Task) -> str:
    """A task's History with times relative to its creation: what to read when a run was slow."""
    start = task.TimeCreate
    lines = [f"task {task.TaskId} {task.TaskStatus.name} in {((task.TimeEnd or time.time()) - start):.2f}s"]
    for e in task.History:
        where = f"step {e.Cursor} {e.Phase.label} #{e.Attempt}" if e.Cursor is not None else ""
        lines.append(f"  +{e.Time - start:7.3f} {e.Event:<19} {where:<22} {e.Actor or ''} {e.Message}")
    return "\n".join(lines)


def slowest(cluster: ChaosCluster, count: int = 3) -> str:
    tasks = sorted(cluster.tasks(), key=lambda t: (t.TimeEnd or time.time()) - t.TimeCreate, reverse=True)
    return "\n".join(timeline(t) for t in tasks[:count])


def log_events(proc: Proc) -> list[dict]:
    events = []
    for line in proc.log_text().splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
    return events


def sweeper_totals(cluster: ChaosCluster) -> Counter[str]:
    """What every sweeper process logged doing: leases lapsed, dispatches re-published, relays."""
    totals: Counter[str] = Counter()
    for proc in cluster.procs.values():
        if isinstance(proc, ChaosProc) and proc.ready == "sweeper started":
            for event in log_events(proc):
                if event.get("event") == "swept":
                    for key in ("lapsed", "redispatched", "relayed"):
                        totals[key] += int(event.get(key) or 0)
    return totals


def redispatch_excess(tasks: Iterable[Task], redeliver_after: float) -> list[str]:
    """Runs the sweeper re-published more often than its backoff allows.

    A run nobody claims is re-published after redeliver_after, then after 2x, 4x ... that, so a
    run that waited W seconds was re-published at most floor(log2(1 + W / redeliver_after)) + 1
    times (one of slack for the sweep period). Once per period would be a redelivery storm.
    """
    excess = []
    for task in tasks:
        runs: dict[tuple, list] = {}
        for e in task.History:
            key = (e.Cursor, e.Phase, e.Attempt)
            if e.Event == "dispatched":
                runs.setdefault(key, [e.Time, None, 0])
            elif e.Event == "claimed" and key in runs and runs[key][1] is None:
                runs[key][1] = e.Time
            elif e.Event == "redispatched" and key in runs:
                runs[key][2] += 1
        for (cursor, phase, attempt), (dispatched, claimed, count) in runs.items():
            waited = (claimed if claimed is not None else task.TimeEnd or time.time()) - dispatched
            allowed = math.floor(math.log2(1 + max(0.0, waited) / redeliver_after)) + 1
            if count > allowed:
                excess.append(f"{task.TaskId} step {cursor} {phase.label} #{attempt}: re-published {count} "
                              f"times in {waited:.1f}s (backoff allows {allowed})")
    return excess


def fault_footprint(event) -> bool:
    if event.Event not in ("attempt_failed", "step_failed", "rollback_failed"):
        return False
    return event.Actor == "sweeper" or any(
        mark in event.Message for mark in ("command process died", "timed out", "cancelled", "lapsed")
    )


def rabbitmqctl_shared(url: str) -> Callable[[], dict[str, int]]:
    """list_queues on the shared node, for the vhost of `url` (through the system wrapper)."""
    vhost = unquote(urlsplit(url).path.lstrip("/")) or "/"

    def run() -> dict[str, int]:
        out = subprocess.run(
            ["rabbitmqctl", "list_queues", "-q", "--no-table-headers", "-p", vhost, "name", "messages"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout
        return _parse_counts(out)

    return run


def _parse_counts(output: str) -> dict[str, int]:
    counts = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return counts


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


class Feeder:
    """Submits planned tasks at a steady rate in the background, so faults hit a busy system."""

    def __init__(self, cluster: ChaosCluster, count: int, seconds: float, seed: int, task_type: str = "chaos_demo"):
        self.cluster = cluster
        self.plans = plan_tasks(count, seed)
        self.interval = seconds / max(1, count)
        self.task_type = task_type
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
            for plan, faults, expected in self.plans:
                task = self.cluster.submit(self.task_type, plan=plan, _baton_faults=faults)
                self.cluster.planned[task.TaskId] = expected
                self.ids.append(task.TaskId)
                self.finished_at = time.monotonic()
                next_at += self.interval
                time.sleep(max(0.0, next_at - time.monotonic()))
        except Exception as exc:  # noqa: BLE001  (a background thread: re-raised by join())
            self.error = exc


# --- the per-scenario report ---------------------------------------------------------------------------


@dataclass
class Row:
    scenario: str
    tasks: int
    faults: str
    statuses: str
    executions: int
    duplicate_executions: int
    duplicate_commits: int
    lost_attempts: int
    settle_seconds: float
    run_seconds: float
    violations: int


ROWS: list[Row] = []


def record(scenario: str, report: ChaosReport, faults: str, settle: float, run: float) -> Row:
    order = ["SUCCESS", "ROLLED_BACK", "ROLLBACK_FAILED"]
    statuses = " ".join(f"{s[:1] if s != 'ROLLBACK_FAILED' else 'F'}={report.statuses.get(s, 0)}" for s in order)
    others = {k: v for k, v in report.statuses.items() if k not in order}
    if others:
        statuses += " " + " ".join(f"{k}={v}" for k, v in others.items())
    row = Row(scenario, report.tasks, faults, statuses, report.executions, report.duplicate_executions,
              report.duplicate_commits, report.lost_attempts, round(settle, 1), round(run, 1), len(report.violations))
    ROWS.append(row)
    print(f"\nCHAOS {json.dumps(row.__dict__)}")
    return row


def table(rows: list[Row]) -> str:
    headers = ["scenario", "tasks", "faults injected", "final S/R/F", "execs", "dup execs",
               "dup commits", "lost", "settle s", "run s", "violations"]
    cells = [[r.scenario, str(r.tasks), r.faults, r.statuses, str(r.executions), str(r.duplicate_executions),
              str(r.duplicate_commits), str(r.lost_attempts), f"{r.settle_seconds:.1f}", f"{r.run_seconds:.1f}",
              str(r.violations)] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    def line(values: list[str]) -> str:
        return " | ".join(v.ljust(w) for v, w in zip(values, widths))

    return "\n".join([line(headers), "-+-".join("-" * w for w in widths), *map(line, cells)])


def assert_clean(cluster: ChaosCluster, report: ChaosReport, ids: Iterable[str] | None = None) -> None:
    problems = [] if report.ok else [report.summary()]
    unexplained = cluster.deviations(ids)
    if unexplained:
        problems.append("outcomes changed without a fault footprint:\n  " + "\n  ".join(unexplained[:20]))
    if problems:
        print(cluster.logs())
    assert not problems, "\n".join(problems)
    assert report.duplicate_commits == 0


def delete_queues(url: str, queues: Iterable[str]) -> None:
    """Delete a previous scenario's queues on a vhost (whatever they hold)."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = connection.channel()
        for queue in queues:
            channel.queue_delete(queue)
    finally:
        connection.close()
