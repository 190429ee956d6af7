"""A step that holds on failure (`on_failure: hold`) holds however its items' ends are applied,
on every store backend. The item that fails owes its notice (item_failed, which holds); another
item's end, applied first, settles the step: that settle found a failed item and sent the task
backward, rolling back what the hold should have kept."""

from __future__ import annotations

import pytest

from common.engine.kinds.for_each import records as fan_out
from common.engine.states import StepState, TaskStatus
from common.store.items.open import open_item_store_for
from tests.contract.store_fixtures import real_mongo_client, real_mongo_url, subject  # noqa: F401
from tests.support.item_records import opened, relay
from tests.unit.test_item_budget import FAILED, OK, _item
from tests.unit.test_item_relay_races import _run


@pytest.fixture(autouse=True)
def records(monkeypatch):
    monkeypatch.setattr(fan_out, "RECORDS_ENABLED", True)


def test_another_items_end_settling_first_holds_the_task_and_rolls_nothing_back(subject):  # noqa: F811
    tasks, items = subject.store, open_item_store_for(subject.store)
    task = opened(tasks, items, count=4, parallel=2, on_failure="hold")
    relays = relay(tasks, items)
    for item in (0, 1):
        relays.apply_owes(_run(tasks, items, task.TaskId, item, OK))
    failed = _run(tasks, items, task.TaskId, 3, FAILED)  # its notice not applied yet
    relays.apply_owes(_run(tasks, items, task.TaskId, 2, OK))  # the last other item's end settles
    relays.apply_owes(failed)
    stored = tasks.get(task.TaskId)
    assert stored.Held is not None and stored.Held.Item == 3, stored.TaskMessage
    assert stored.TaskStatus is TaskStatus.RUNNING and stored.Steps[0].State is StepState.RUNNING
    assert [_item(items, task.TaskId, i).State for i in range(4)] == [StepState.SUCCEEDED] * 3 + [StepState.FAILED]
