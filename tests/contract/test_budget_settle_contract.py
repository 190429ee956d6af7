"""The forward settle of a step with a failure budget waits for its tolerated items
(docs/design/item-records.md, "A failure budget"), on every store backend: SQLite, mongomock and
SecantusDB, a real wire-protocol server. An item failed within the budget is not done until its
own rollback ended: while it waits for its place in the budget (failed, still open) or rolls back,
another item's end must not settle the step. Settled then, the step would count the item as
neither tolerated nor failed: the task would succeed without its failed items, or go backward
over a failure the budget allows.

Each interleaving is forced by the order the items' outcomes are applied, as two modules and the
relay of each would apply them: the last item of one chain fails, the last of the other chain
succeeds while the failed one is still being decided or rolled back."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from common.engine.kinds.for_each import records as fan_out
from common.engine.kinds.for_each.fields import Tolerance
from common.engine.states import Phase, StepState, TaskStatus
from common.relay.item_looks import FORWARD_OPEN, ItemLooks
from common.store.items.open import open_item_store_for
from tests.contract.store_fixtures import real_mongo_client, real_mongo_url, subject  # noqa: F401
from tests.support.item_records import opened as _opened, relay as _relay
from tests.unit.test_item_budget import FAILED, OK, _item
from tests.unit.test_item_relay_races import _run


@pytest.fixture(autouse=True)
def records(monkeypatch):
    monkeypatch.setattr(fan_out, "RECORDS_ENABLED", True)


def _two_chains_at_their_last_items(subject):  # noqa: F811
    """Items 0, 1 done; items 2 (chain 0) and 3 (chain 1) dispatched: the step's last two."""
    tasks, items = subject.store, open_item_store_for(subject.store)
    task = _opened(tasks, items, count=4, parallel=2, tolerate=Tolerance(Count=1))
    relay = _relay(tasks, items)
    for item in (0, 1):
        relay.apply_owes(_run(tasks, items, task.TaskId, item, OK))
    assert [_item(items, task.TaskId, i).State for i in (2, 3)] == [StepState.RUNNING] * 2
    return tasks, items, task, relay


def _succeeds_with_one_failed_item(tasks, items, task_id: str) -> None:
    stored = tasks.get(task_id)
    assert stored.TaskStatus is TaskStatus.SUCCESS, stored.TaskMessage
    assert stored.Steps[0].FailedItems == 1 and stored.FailedItems == 1, stored.Steps[0]
    assert stored.TaskMessage == "succeeded with 1 failed item (each)"
    assert _item(items, task_id, 3).State is StepState.ROLLED_BACK and _item(items, task_id, 3).Tolerated


def test_the_step_does_not_settle_while_a_tolerated_item_rolls_back(subject):  # noqa: F811
    tasks, items, task, relay = _two_chains_at_their_last_items(subject)
    relay.apply_owes(_run(tasks, items, task.TaskId, 3, FAILED))  # tolerated: its own rollback dispatched
    assert _item(items, task.TaskId, 3).State is StepState.ROLLING_BACK
    relay.apply_owes(_run(tasks, items, task.TaskId, 2, OK))  # the other chain's end asks: not yet
    assert tasks.get(task.TaskId).Steps[0].ItemsOpen, tasks.get(task.TaskId).Steps[0]
    undone = _run(tasks, items, task.TaskId, 3, OK)  # the rollback's own end settles the step
    assert undone.Run is None and _item(items, task.TaskId, 3).RollbackAttempts == 1
    relay.apply_owes(undone)
    _succeeds_with_one_failed_item(tasks, items, task.TaskId)
    _close(items)


def test_the_step_does_not_settle_while_a_failed_item_waits_for_its_place_in_the_budget(subject):  # noqa: F811
    tasks, items, task, relay = _two_chains_at_their_last_items(subject)
    failed = _run(tasks, items, task.TaskId, 3, FAILED)  # written, its decision not applied yet
    assert failed.State is StepState.FAILED and failed.Open and failed.Owes == ["tolerate"]
    relay.apply_owes(_run(tasks, items, task.TaskId, 2, OK))  # the other chain's end asks: not yet
    assert tasks.get(task.TaskId).TaskStatus is TaskStatus.RUNNING, tasks.get(task.TaskId).TaskMessage
    assert tasks.get(task.TaskId).Steps[0].ItemsOpen, tasks.get(task.TaskId).Steps[0]
    relay.apply_owes(failed)  # decided: a place, its own rollback
    record = _item(items, task.TaskId, 3)
    assert record.State is StepState.ROLLING_BACK and record.Run.Phase is Phase.ROLLBACK
    relay.apply_owes(_run(tasks, items, task.TaskId, 3, OK))
    _succeeds_with_one_failed_item(tasks, items, task.TaskId)
    _close(items)


def test_a_settle_whose_items_do_not_add_up_keeps_the_step_open_for_the_item_it_missed(subject, monkeypatch):  # noqa: F811
    """Should a look miss an item still on its way (here: looks blind to a tolerated item
    rolling back, as they were before they waited for one), the settle must not end the step
    as if that item had succeeded: it refuses, logs the inconsistency, and the missed item's
    own end settles the step."""
    seeing = ItemLooks.settled

    def blind(self, task, cursor):
        if task.Steps[cursor].State is StepState.RUNNING:
            return None if self.any(task, cursor, FORWARD_OPEN) else (self.first(task, cursor, StepState.FAILED),)
        return seeing(self, task, cursor)

    monkeypatch.setattr(ItemLooks, "settled", blind)
    tasks, items, task, relay = _two_chains_at_their_last_items(subject)
    relay.apply_owes(_run(tasks, items, task.TaskId, 3, FAILED))  # tolerated: rolling back
    with capture_logs() as logs:
        relay.apply_owes(_run(tasks, items, task.TaskId, 2, OK))  # the blind look sees nothing open
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.RUNNING and stored.Steps[0].ItemsOpen, stored.Steps[0]
    (refused,) = [e for e in logs if e["event"] == "step settle refused: items unaccounted for"]
    assert refused["task_id"] == task.TaskId and refused["step"] == 0 and refused["log_level"] == "error"
    assert "3 succeeded" in refused["reason"] and "1 rolling_back" in refused["reason"], refused
    relay.apply_owes(_run(tasks, items, task.TaskId, 3, OK))  # the missed item's own end settles it
    _succeeds_with_one_failed_item(tasks, items, task.TaskId)
    _close(items)


def _close(items) -> None:
    if hasattr(items, "close"):  # a SQLite item store's own connections
        items.close()
