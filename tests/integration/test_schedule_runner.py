"""The sweeper's schedule job on a real SQLite store and TaskService, with a clock the test moves."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from common.broker.inprocess import InProcessBroker
from common.flows import load_flows
from common.scheduling import Missed, Overlap, Schedule
from common.relay.schedule_runner import ScheduleRunner
from common.settings import load_settings
from common.engine.states import TaskStatus
from common.store.sqlite.schedules import SqliteScheduleStore
from common.store.sqlite.tasks import SqliteStore
from common.store.tasks.filters import TaskFilter
from oss.services.schedules import ScheduleService
from oss.services.tasks import TaskService

FLOWS = """
version: 1
task_types:
  check_backups:
    parameters:
      cluster: {type: string, required: true}
    steps:
      - name: only
        normal: {module: monitor, command: noop}
  other:
    steps:
      - name: only
        normal: {module: monitor, command: noop}
"""
T0 = 1_800_000_000.0
GRACE = 60.0


@dataclass
class Clock:
    now: float = T0

    def __call__(self) -> float:
        return self.now


@dataclass
class World:
    clock: Clock
    tasks: SqliteStore
    schedules: SqliteScheduleStore
    service: TaskService
    admin: ScheduleService
    runner: ScheduleRunner

    def add(self, name: str = "backups", **options: Any) -> Schedule:
        options.setdefault("interval_seconds", 10.0)
        return self.admin.create(name=name, task_type=options.pop("task_type", "check_backups"),
                                 parameters=options.pop("parameters", {"cluster": "c1"}), **options)  # fmt: skip

    def tick(self, at: float) -> None:
        self.clock.now = at
        self.runner.run_due(at)

    def created(self, name: str = "backups") -> list[Any]:
        return self.tasks.list_tasks(TaskFilter(labels={"schedule": name}), limit=1000)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    flows_path = tmp_path / "flows.yaml"
    flows_path.write_text(FLOWS)
    flows = load_flows(flows_path)
    clock = Clock()
    tasks = SqliteStore(tmp_path / "baton.db")
    schedules = SqliteScheduleStore(tmp_path / "baton.db")
    broker = InProcessBroker()
    service = TaskService(tasks, broker, flows, load_settings(flows_path=str(flows_path)), clock)
    service.declare_queues()
    runner = ScheduleRunner(schedules, tasks, service.submit, GRACE)
    yield World(clock, tasks, schedules, service, ScheduleService(schedules, flows, clock), runner)
    service.close()
    broker.close()
    schedules.close()
    tasks.close()


def test_each_tick_creates_one_task_with_the_schedule_label_and_key(world: World) -> None:
    schedule = world.add(overlap=Overlap.ALLOW)
    world.tick(T0 + 35)
    created = sorted(world.created(), key=lambda t: t.IdempotencyKey)
    assert [t.IdempotencyKey for t in created] == [
        f"schedule:{schedule.ScheduleId}:{round((T0 + s) * 1000)}" for s in (10, 20, 30)
    ]
    assert all(t.Parameters == {"cluster": "c1"} and t.TaskType == "check_backups" for t in created)
    after = world.admin.get("backups")
    assert (after.Fired, after.Skipped, after.NextAt) == (3, 0, T0 + 40)
    world.tick(T0 + 35)
    assert len(world.created()) == 3


class StaleDue:
    """A schedule store whose `due` answers what it answered before: a second sweeper that read
    the schedules before the first one wrote them."""

    def __init__(self, inner: SqliteScheduleStore, snapshot: list[Schedule]):
        self._inner, self._snapshot = inner, snapshot

    def due(self, now: float, limit: int) -> list[Schedule]:
        return self._snapshot

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_second_sweeper_with_a_stale_view_creates_nothing_twice(world: World) -> None:
    world.add(overlap=Overlap.ALLOW)
    stale = world.schedules.due(T0 + 25, 10)
    world.tick(T0 + 25)
    racer = ScheduleRunner(StaleDue(world.schedules, stale), world.tasks, world.service.submit, GRACE)  # type: ignore[arg-type]
    racer.run_due(T0 + 25)
    assert len(world.created()) == 2
    assert world.admin.get("backups").Fired == 2  # the racer's compare-and-set lost


def test_overlap_skip_drops_a_tick_while_the_previous_task_runs(world: World) -> None:
    world.add()  # skip is the default
    world.tick(T0 + 10)
    world.tick(T0 + 20)  # the first task never started: still running as far as the schedule knows
    assert len(world.created()) == 1
    assert world.admin.get("backups").Skipped == 1
    first = world.created()[0]
    world.service.actions.apply("cancel", first.TaskId, "olga", "done with it")
    world.tick(T0 + 30)
    assert len(world.created()) == 2


def test_overlap_queue_holds_the_tick_until_the_previous_task_ends(world: World) -> None:
    world.add(overlap=Overlap.QUEUE)
    world.tick(T0 + 10)
    world.tick(T0 + 25)
    held = world.admin.get("backups")
    assert len(world.created()) == 1 and held.NextAt == T0 + 20 and held.Skipped == 0
    world.service.actions.apply("cancel", world.created()[0].TaskId, "olga", "finish it")
    world.tick(T0 + 26)  # the held tick 20 runs now; tick 30 is not due yet
    assert len(world.created()) == 2
    assert world.admin.get("backups").NextAt == T0 + 30


def test_after_downtime_ticks_within_the_grace_run_and_older_ones_are_dropped(world: World) -> None:
    world.add(overlap=Overlap.ALLOW)  # missed: latest is the default
    world.tick(T0 + 1005)  # 950..1000 are within the 60 s grace; 10..940 were missed
    assert len(world.created()) == 6
    after = world.admin.get("backups")
    assert after.Skipped == 94 and after.NextAt == T0 + 1010


def test_after_downtime_with_every_tick_missed_the_latest_runs_once(world: World) -> None:
    world.add(overlap=Overlap.ALLOW)
    strict = ScheduleRunner(world.schedules, world.tasks, world.service.submit, misfire_grace=1)
    world.clock.now = T0 + 1005
    strict.run_due(T0 + 1005)  # every tick 10..1000 is more than 1 s late
    created = world.created()
    assert len(created) == 1
    assert created[0].IdempotencyKey.endswith(str(round((T0 + 1000) * 1000)))
    assert world.admin.get("backups").Skipped == 99


def test_missed_all_runs_every_missed_tick(world: World) -> None:
    world.add(overlap=Overlap.ALLOW, missed=Missed.ALL)
    world.tick(T0 + 305)
    assert len(world.created()) == 30


def test_a_schedule_that_cannot_create_its_task_says_why_and_the_others_go_on(world: World, tmp_path: Path) -> None:
    world.add("broken", overlap=Overlap.ALLOW)
    world.add("fine", task_type="other", parameters={}, overlap=Overlap.ALLOW)
    # flows.yaml changed since: check_backups now needs a parameter the schedule lacks
    changed = FLOWS.replace("cluster: {type: string, required: true}",
                            "cluster: {type: string, required: true}\n      region: {type: string, required: true}")  # fmt: skip
    (tmp_path / "changed.yaml").write_text(changed)
    world.service._flows = load_flows(tmp_path / "changed.yaml")
    world.tick(T0 + 10)
    broken = world.admin.get("broken")
    assert broken.Fired == 0 and broken.Skipped == 1 and "region" in broken.LastError
    assert broken.NextAt == T0 + 20  # it goes on ticking: fixing flows.yaml heals it
    assert len(world.created("fine")) == 1


def test_a_pause_while_a_tick_creates_its_task_keeps_the_pause_and_counts_the_task(world: World) -> None:
    """The schedule's compare-and-set loses to the pause; what the round did is recorded on the
    paused schedule, not dropped (the task exists: its tick counts as fired)."""
    world.add(overlap=Overlap.ALLOW)

    def submit_while_paused(*args: Any, **options: Any) -> Any:
        world.admin.pause("backups")  # an operator, between the task's creation and the count
        return world.service.submit(*args, **options)

    racing = ScheduleRunner(world.schedules, world.tasks, submit_while_paused, GRACE)
    racing.run_due(T0 + 10)
    [task] = world.created()
    after = world.admin.get("backups")
    assert after.Paused
    assert (after.Fired, after.LastTaskId, after.LastTickAt, after.NextAt) == (1, task.TaskId, T0 + 10, T0 + 20)
    world.tick(T0 + 30)  # paused: no tick runs
    assert len(world.created()) == 1


def test_paused_schedules_do_not_tick_and_resume_skips_what_passed(world: World) -> None:
    world.add(overlap=Overlap.ALLOW)
    world.admin.pause("backups")
    world.tick(T0 + 100)
    assert world.created() == []
    world.clock.now = T0 + 105
    resumed = world.admin.resume("backups")
    assert resumed.NextAt == T0 + 110
    world.tick(T0 + 110)
    assert len(world.created()) == 1
    assert world.tasks.get(world.created()[0].TaskId).TaskStatus is TaskStatus.NOT_STARTED


def test_each_tick_is_counted_on_the_schedule_as_its_task_is_created(world: World) -> None:
    """A round catching up on several ticks records each one as it goes: a reader (or a sweeper
    taking over after this one is killed) never sees tasks the schedule does not count."""
    world.add(overlap=Overlap.ALLOW, missed=Missed.ALL)
    seen: list[int] = []

    def submit_and_look(*args: Any, **options: Any) -> Any:
        seen.append(world.admin.get("backups").Fired)
        return world.service.submit(*args, **options)

    ScheduleRunner(world.schedules, world.tasks, submit_and_look, GRACE).run_due(T0 + 35)
    assert seen == [0, 1, 2]
    after = world.admin.get("backups")
    assert (after.Fired, after.NextAt, len(world.created())) == (3, T0 + 40, 3)


@pytest.mark.parametrize("change", ["pause", "delete"])
def test_a_pause_or_delete_during_a_round_stops_the_ticks_not_yet_started(world: World, change: str) -> None:
    """The operator's answer holds: once a pause or delete is written, no tick the round had
    not started yet creates a task (the one being created then still counts)."""
    world.add(overlap=Overlap.ALLOW, missed=Missed.ALL)
    calls = 0

    def submit_then_change(*args: Any, **options: Any) -> Any:
        nonlocal calls
        calls += 1
        submission = world.service.submit(*args, **options)
        if calls == 2:
            getattr(world.admin, change)("backups")
        return submission

    ScheduleRunner(world.schedules, world.tasks, submit_then_change, GRACE).run_due(T0 + 45)
    assert calls == 2 and len(world.created()) == 2
    if change == "pause":
        after = world.admin.get("backups")
        assert after.Paused and (after.Fired, after.LastTickAt, after.NextAt) == (2, T0 + 20, T0 + 30)
