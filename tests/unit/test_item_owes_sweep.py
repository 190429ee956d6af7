"""The sweeper leaves what an item record owes its step to the record's writer for the relay
grace (common/relay/owes_grace.py), on a real SQLite store and the in-process broker: a writer
applies it right after its write, so the sweeper applying it at once races a living writer (the
step's next change made twice over, a traced task's next message linked to no span). A record
left owing, unchanged, past the grace (its writer died) is applied by the sweeper."""

from __future__ import annotations

import time

import pytest

from common.broker.inprocess import InProcessBroker
from common.engine.core.entries import AttemptResult, Timing, create_task
from common.engine.core.units import new_id
from common.engine.kinds.for_each import records as fan_out
from common.engine.kinds.for_each.item_changes import claim_item, finish_item_attempt
from common.engine.kinds.for_each.records import keeps_records
from common.engine.states import ResultCode
from common.queues import module_queue
from common.relay.items import ItemRelay
from common.relay.sweeper import SweepConfig, Sweeper
from common.store.sqlite.items import SqliteItemStore
from common.store.sqlite.tasks import SqliteStore
from tests.support.builders import make_step

GRACE = 1.0


@pytest.fixture
def stores(tmp_path, monkeypatch):
    monkeypatch.setattr(fan_out, "RECORDS_ENABLED", True)
    tasks, items = SqliteStore(tmp_path / "t.db"), SqliteItemStore(tmp_path / "t.db")
    yield tasks, items
    items.close()
    tasks.close()


def _owing_record(tasks, items):
    """A for_each step over records whose item 0 has just been written done by its module,
    which has not applied what it owes yet."""
    step = make_step("each")
    step.ForEach, step.MaxParallel, step.After = "hosts", 1, []
    task = create_task(task_type="t", steps=[step], parameters={"hosts": ["h0", "h1"]},
                       timing=Timing(time.time(), lease=30))  # fmt: skip
    assert keeps_records(task.Steps[0])
    tasks.insert(task)
    (entry,) = task.Outbox
    ItemRelay(tasks, items, lambda: Timing(time.time(), lease=30), lambda t: None, lambda r: None).apply(task.TaskId, entry)
    record = items.get_item(task.TaskId, 0, 0, 0)
    claimed = claim_item(record, task, record.Run.DispatchId, "me", Timing(time.time(), lease=30))
    claimed.Version = record.Version + 1
    assert items.compare_and_set_item(claimed, record.Version)
    done = finish_item_attempt(claimed, tasks.get(task.TaskId), claimed.Run.DispatchId, "me",
                               AttemptResult(ResultCode.OK), Timing(time.time(), lease=30), new_id)  # fmt: skip
    done.Version = claimed.Version + 1
    assert items.compare_and_set_item(done, claimed.Version)
    assert done.Owes
    return done


def _sweeper(tasks) -> tuple[Sweeper, list[float]]:
    """A sweeper on the in-process broker and the clock it reads (a list the test moves on)."""
    broker = InProcessBroker()
    broker.declare(module_queue("mod"))
    clock = [time.time()]
    sweeper = Sweeper(tasks, broker, SweepConfig(lease=30, redeliver_after=60, relay_grace=GRACE, interval=0.1),
                      clock=lambda: clock[0])  # fmt: skip
    return sweeper, clock


def test_the_sweeper_applies_what_a_record_owes_only_once_it_stayed_owing_for_the_relay_grace(stores):
    tasks, items = stores
    done = _owing_record(tasks, items)
    sweeper, clock = _sweeper(tasks)
    stored = lambda: items.get_item(done.TaskId, 0, 0, 0)  # noqa: E731
    try:
        assert sweeper.sweep_once().swept
        assert stored().Owes == done.Owes  # just written: its writer's to apply
        clock[0] += GRACE / 2
        sweeper.sweep_once()
        assert stored().Owes == done.Owes
        clock[0] += GRACE
        sweeper.sweep_once()  # unchanged for the grace: its writer died
        assert stored().Owes == []
        assert items.get_item(done.TaskId, 0, 0, 1).Run is not None  # its successor started
    finally:
        sweeper.close()


def test_a_record_changed_since_the_sweeper_saw_it_owing_waits_the_grace_again(stores):
    tasks, items = stores
    done = _owing_record(tasks, items)
    sweeper, clock = _sweeper(tasks)
    try:
        sweeper.sweep_once()
        changed = done.model_copy(deep=True)  # its writer is alive: it changed the record since
        changed.Version = done.Version + 1
        assert items.compare_and_set_item(changed, done.Version)
        clock[0] += GRACE * 1.5
        sweeper.sweep_once()
        assert items.get_item(done.TaskId, 0, 0, 0).Owes == done.Owes
        clock[0] += GRACE * 1.5
        sweeper.sweep_once()
        assert items.get_item(done.TaskId, 0, 0, 0).Owes == []
    finally:
        sweeper.close()
