"""An item run of a step over item records on a real SQLite store (docs/design/item-records.md, "The
life of a step over records"): the lease keeper renews it on its record and loses it once the record
moved on; the fence check and rollback_reached read the record; a pause holds the chain's next item
until the task resumes."""

from __future__ import annotations

import time

import pytest

from common.engine.core.fence import FencingToken, StaleFence, check_fence
from common.engine.kinds.for_each.item_record import OWES_SUCCESSOR, ItemRecord
from common.engine.kinds.for_each.records import RECORDS, keeps_records
from common.engine.kinds.for_each.item_changes import claim_item, finish_item_attempt, new_records
from common.engine.operator.flow import pause, resume
from common.engine.states import Phase, ResultCode, RunState, StepState
from common.engine.core.entries import AttemptResult, Timing, create_task
from common.engine.core.units import new_id
from common.relay.items import ItemRelay
from common.runtime.lease import LeaseKeeper
from common.runtime.registry import CommandContext
from common.store.sqlite.items import SqliteItemStore
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from tests.support.builders import make_step


@pytest.fixture
def stores(tmp_path):
    tasks, items = SqliteStore(tmp_path / "t.db"), SqliteItemStore(tmp_path / "t.db")
    yield tasks, items
    items.close()
    tasks.close()


def _opened(tasks, items, count=4, parallel=2):
    """A task whose for_each step opened over records, as the item relay leaves it."""
    step = make_step("each")
    step.ForEach, step.MaxParallel, step.After = "hosts", parallel, []
    task = create_task(task_type="t", steps=[step], parameters={"hosts": [f"h{i}" for i in range(count)]},
                       timing=Timing(time.time()))
    task.Outbox = []
    task.Steps[0].ItemStore, task.Steps[0].ItemCount, task.Steps[0].ItemsOpen = RECORDS, count, True
    task.Steps[0].State = StepState.RUNNING
    tasks.insert(task)
    items.insert_items(new_records(task, 0, task.Parameters["hosts"], Timing(time.time()), new_id, "relay"))
    return task


def _claim(items, task, item, owner="me") -> ItemRecord:
    record = items.get_item(task.TaskId, 0, 0, item)
    claimed = claim_item(record, task, record.Run.DispatchId, owner, Timing(time.time(), lease=30))
    claimed.Version = record.Version + 1
    assert items.compare_and_set_item(claimed, record.Version)
    return claimed


def _context(tasks, items, task, record, owner="me") -> CommandContext:
    return CommandContext(task_id=task.TaskId, task_type="t", module="m", command="c", cursor=0, phase=Phase.NORMAL,
                          attempt=1, idempotency_key="k", parameters={}, dispatch_id=record.Run.DispatchId,
                          owner=owner, read_task=tasks.get, read_item=items.get_item, item=record.Value,
                          item_index=record.Item)


def test_the_lease_of_an_item_run_is_renewed_on_its_record_and_lost_once_it_moved_on(stores):
    tasks, items = stores
    task = _opened(tasks, items)
    claimed = _claim(items, task, 0)
    keeper = LeaseKeeper(tasks, "me", lease=30, interval=3600, clock=lambda: time.time() + 100, items=items)
    with keeper.hold(task.TaskId, claimed.Run.DispatchId, (0, 0, 0)) as lease:
        keeper._renew(lease)  # noqa: SLF001  (the keeper's thread)
        renewed = items.get_item(task.TaskId, 0, 0, 0)
        assert not lease.lost.is_set() and renewed.Run.Deadline > claimed.Run.Deadline + 90
        assert tasks.get(task.TaskId).Version == task.Version  # the task document is not written
        stolen = renewed.model_copy(deep=True)
        stolen.Run.Owner, stolen.Version = "someone else", renewed.Version + 1
        assert items.compare_and_set_item(stolen, renewed.Version)
        keeper._renew(lease)  # noqa: SLF001
        assert lease.lost.is_set()


def test_the_fence_of_an_item_run_reads_its_record(stores):
    tasks, items = stores
    task = _opened(tasks, items)
    assert keeps_records(tasks.get(task.TaskId).Steps[0])
    claimed = _claim(items, task, 1)
    ctx = _context(tasks, items, task, claimed)
    assert ctx.fencing_token.item == 1
    ctx.check_fence()  # current: nothing raised
    assert not ctx.rollback_reached()
    done = finish_item_attempt(claimed, task, claimed.Run.DispatchId, "me", AttemptResult(ResultCode.OK),
                               Timing(time.time()), new_id)
    done.Version = claimed.Version + 1
    assert items.compare_and_set_item(done, claimed.Version)
    with pytest.raises(StaleFence, match="the item has moved on"):
        ctx.check_fence()
    late = FencingToken(task.TaskId, 0, Phase.NORMAL, 1, claimed.Run.DispatchId, "me", 1)
    with pytest.raises(StaleFence):
        check_fence(tasks.get, late)  # no reader for the record: never taken as current


def test_a_pause_holds_the_chain_and_the_sweepers_relay_starts_it_after_the_resume(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=4, parallel=2)
    published: list[int] = []
    relay = ItemRelay(tasks, items, lambda: Timing(time.time()), lambda t: None,
                      lambda r: published.append(r.Item))
    claimed = _claim(items, task, 0)
    mutate(tasks, task.TaskId, lambda t: pause(t, "op", "hold", Timing(time.time())))
    done = finish_item_attempt(claimed, tasks.get(task.TaskId), claimed.Run.DispatchId, "me",
                               AttemptResult(ResultCode.OK), Timing(time.time()), new_id)
    done.Version = claimed.Version + 1
    assert items.compare_and_set_item(done, claimed.Version)
    relay.apply_owes(done)
    held = items.get_item(task.TaskId, 0, 0, 0)
    assert OWES_SUCCESSOR in held.Owes and items.get_item(task.TaskId, 0, 0, 2).State is StepState.WAITING
    assert [r.Item for r in items.owing(10)] == [0]  # left for the sweeper's relay

    mutate(tasks, task.TaskId, lambda t: resume(t, "op", "go on", Timing(time.time())))
    for record in items.owing(10):  # the sweeper's round over what records still owe
        relay.apply_owes(record)
    started = items.get_item(task.TaskId, 0, 0, 2)
    assert started.State is StepState.RUNNING and started.Run.State is RunState.PENDING and published == [2]
    assert items.get_item(task.TaskId, 0, 0, 0).Owes == []
