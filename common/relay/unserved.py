"""The sweeper's watch for steps nobody can take: a step waiting past BATON_UNSERVED_ALARM_SECONDS
while no live module serves its queue (a module that is down, never deployed, or a typo in
flows.yaml such as `dnz`) raises one alarm per queue, instead of the task sitting "running"
forever in silence. A module may start after OSS, so this is noticed at run time, not refused
at start-up.

One alarm per episode: its id names the queue and the oldest waiting dispatch, so every sweep
while that step still waits produces the same alarm (stored once), and while an alarm of the
queue is open no other is raised. The alarm goes to the monitor like any other (stored, logged,
sent to the webhook); when the monitor itself is not live, the sweeper stores it directly.
A drained module's queue raises none: its processes are down on purpose, for a deploy.
"""

from __future__ import annotations

from collections.abc import Iterable

import structlog

from common.engine.codes import AlarmKind
from common.broker.port import Broker
from common.engine.document import Alarm, Run, Task
from common.queues import ALARM_QUEUE, module_queue
from common.engine.states import RunState
from common.store.side.drains import ModuleDrains
from common.store.side.modules import ModuleRegistry, live_modules
from common.store.tasks.port import TaskStore

log = structlog.get_logger(__name__)
KIND = AlarmKind.NO_LIVE_MODULE
MONITOR = "monitor"
BATCH = 500


def run_module(task: Task, run: Run) -> str:
    return task.Steps[run.Cursor].module_of(run.Item, run.Phase)


def pending_runs(task: Task, due_before: float | None = None, item_runs: Iterable[Run] = ()) -> list[Run]:
    """Its runs nobody claimed (due before `due_before` when given), longest waiting first.
    `item_runs`: the runs of its items kept in records, as a reader found them."""
    runs = [r for r in (*task.Runs, *item_runs) if _waiting(r, due_before)]
    return sorted(runs, key=lambda r: r.Since or 0.0)


def _waiting(run: Run, due_before: float | None) -> bool:
    """Nobody claimed it (since before `due_before`, when given)."""
    if run.State is not RunState.PENDING or run.Since is None:
        return False
    return due_before is None or run.Since <= due_before


def unserved(waiting: Iterable[Task], live: Iterable[str], due_before: float,
             item_runs: Iterable[tuple[Task, Run]] = ()) -> dict[str, list[tuple[Task, Run]]]:
    """module -> its waiting runs (longest waiting first), for modules with no live process.
    `item_runs`: runs of items kept in records, each with its task, found waiting elsewhere."""
    serving = set(live)
    groups: dict[str, list[tuple[Task, Run]]] = {}
    found = [(task, run) for task in waiting for run in pending_runs(task, due_before)]
    found += [(task, run) for task, run in item_runs if _waiting(run, due_before)]
    for task, run in found:
        module = run_module(task, run)
        if module not in serving:
            groups.setdefault(module, []).append((task, run))
    return {m: sorted(entries, key=lambda e: e[1].Since or 0.0) for m, entries in groups.items()}


def unserved_notice(module: str) -> str:
    """How a task waiting on `module` says so (the task view, the alarm)."""
    return f"no live module serves queue {module_queue(module)}"


def waiting_notice(task: Task, live: Iterable[str], item_runs: Iterable[Run] = ()) -> str | None:
    """The task view's `Waiting`: its longest-waiting run on a queue no live module serves
    (`item_runs`: the runs of its items kept in records, as a reader found them)."""
    serving = set(live)
    for run in pending_runs(task, item_runs=item_runs):
        if run_module(task, run) not in serving:
            return unserved_notice(run_module(task, run))
    return None


def unserved_alarm(module: str, entries: list[tuple[Task, Run]], now: float) -> Alarm:
    oldest, run = entries[0]
    step = oldest.Steps[run.Cursor]
    waited = now - (run.Since or now)
    return Alarm(
        AlarmId=f"{KIND}:{module}:{run.DispatchId}",
        Kind=KIND,
        Time=now,
        Message=(f"{unserved_notice(module)}: {len(entries)} step(s) waiting, the oldest for {waited:.0f}s "
                 f"(task {oldest.TaskId} step {run.Cursor} {step.Name}); start module {module!r} "
                 "or fix flows.yaml"),
        TaskId=oldest.TaskId, Cursor=run.Cursor, Phase=run.Phase, Module=module, Command=step.command_of(run.Item, run.Phase),
    )  # fmt: skip


class UnservedWatch:
    """A sweeper job (common.relay.sweeper.Job): called with "now" every round."""

    def __init__(self, store: TaskStore, registry: ModuleRegistry, broker: Broker, threshold: float,
                 module_ttl: float, drains: ModuleDrains | None = None):  # fmt: skip
        self._store, self._registry, self._broker = store, registry, broker
        self._threshold, self._ttl = threshold, module_ttl
        self._drains = drains
        self._item_runs: list[tuple[Task, Run]] = []

    def note_unclaimed_items(self, runs: list[tuple[Task, Run]]) -> None:
        """The runs of items kept in records that the sweeper's round found unclaimed and
        published again (common.relay.item_sweep): looked at by the next call, then forgotten.
        Such a run is seen again at each of its redeliveries, so an item waiting on a queue
        nobody serves raises the alarm at its first redelivery past the threshold."""
        self._item_runs = list(runs)

    def __call__(self, now: float) -> list[Alarm]:
        """Raise the alarms due now; returns them (already open ones excepted)."""
        waiting = self._store.waiting_unclaimed(now - self._threshold, BATCH)
        item_runs, self._item_runs = self._item_runs, []
        if not waiting and not item_runs:
            return []
        live = live_modules(self._registry.registrations(), now, self._ttl)
        drained = {d.Module for d in self._drains.drains() if d.Drained} if self._drains is not None else set()
        groups = {m: e for m, e in unserved(waiting, live, now - self._threshold, item_runs).items()
                  if m not in drained}
        if not groups:
            return []
        open_alarms = self._store.list_alarms(acknowledged=False, limit=BATCH)
        already = {a.Module for a in open_alarms if a.Kind == KIND}
        raised = [unserved_alarm(m, entries, now) for m, entries in sorted(groups.items()) if m not in already]
        for alarm in raised:
            log.warning("no live module for a waiting step", module=alarm.Module, task_id=alarm.TaskId,
                        step=alarm.Cursor, phase=alarm.Phase.label if alarm.Phase else None)  # fmt: skip
            if MONITOR in live:
                self._broker.publish(ALARM_QUEUE, alarm.model_dump_json().encode(), message_id=alarm.AlarmId)
            else:
                self._store.add_alarm(alarm)
        return raised

    def close(self) -> None:
        self._registry.close()
        if self._drains is not None:
            self._drains.close()
