"""The sweeper's watch for steps nobody can take: a step waiting past BATON_UNSERVED_ALARM_SECONDS
while no live module serves its queue (a module that is down, never deployed, or a typo in
flows.yaml such as `dnz`) raises one alarm per queue, instead of the task sitting "running"
forever in silence. A module may start after OSS, so this is noticed at run time, not refused
at start-up.

One alarm per episode: its id names the queue and the oldest waiting dispatch, so every sweep
while that step still waits produces the same alarm (stored once), and while an alarm of the
queue is open no other is raised. The alarm goes to the monitor like any other (stored, logged,
sent to the webhook); when the monitor itself is not live, the sweeper stores it directly.
"""

from __future__ import annotations

from collections.abc import Iterable

import structlog

from common.broker.port import Broker
from common.models import Alarm, Task
from common.queues import ALARM_QUEUE, module_queue
from common.store.modules_port import ModuleRegistry, live_modules
from common.store.port import TaskStore

log = structlog.get_logger(__name__)
KIND = "no_live_module"
MONITOR = "monitor"
BATCH = 500


def waiting_module(task: Task) -> str | None:
    if task.Active is None:
        return None
    return task.Steps[task.Active.Cursor].module(task.Active.Phase)


def unserved(waiting: Iterable[Task], live: Iterable[str]) -> dict[str, list[Task]]:
    """module -> its waiting tasks (longest waiting first), for modules with no live process."""
    serving = set(live)
    groups: dict[str, list[Task]] = {}
    for task in waiting:
        module = waiting_module(task)
        if module is not None and module not in serving:
            groups.setdefault(module, []).append(task)
    return groups


def unserved_notice(module: str) -> str:
    """How a task waiting on `module` says so (the task view, the alarm)."""
    return f"no live module serves queue {module_queue(module)}"


def unserved_alarm(module: str, tasks: list[Task], now: float) -> Alarm:
    oldest = tasks[0]
    run = oldest.Active
    assert run is not None
    step = oldest.Steps[run.Cursor]
    waited = now - (run.Since or now)
    return Alarm(
        AlarmId=f"{KIND}:{module}:{run.DispatchId}",
        Kind=KIND,
        Time=now,
        Message=(f"{unserved_notice(module)}: {len(tasks)} step(s) waiting, the oldest for {waited:.0f}s "
                 f"(task {oldest.TaskId} step {run.Cursor} {step.Name}); start module {module!r} "
                 "or fix flows.yaml"),
        TaskId=oldest.TaskId, Cursor=run.Cursor, Phase=run.Phase, Module=module, Command=step.command(run.Phase),
    )  # fmt: skip


class UnservedWatch:
    """A sweeper job (common.sweeper.Job): called with "now" every round."""

    def __init__(self, store: TaskStore, registry: ModuleRegistry, broker: Broker, threshold: float,
                 module_ttl: float):  # fmt: skip
        self._store, self._registry, self._broker = store, registry, broker
        self._threshold, self._ttl = threshold, module_ttl

    def __call__(self, now: float) -> list[Alarm]:
        """Raise the alarms due now; returns them (already open ones excepted)."""
        waiting = self._store.waiting_unclaimed(now - self._threshold, BATCH)
        if not waiting:
            return []
        live = live_modules(self._registry.registrations(), now, self._ttl)
        groups = unserved(waiting, live)
        if not groups:
            return []
        open_alarms = self._store.list_alarms(acknowledged=False, limit=BATCH)
        already = {a.Module for a in open_alarms if a.Kind == KIND}
        raised = [unserved_alarm(m, tasks, now) for m, tasks in sorted(groups.items()) if m not in already]
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
