"""A task turned backward while an item failed within its step's budget still undoes itself
(docs/design/item-records.md, "A failure budget"), on every store backend: SQLite, mongomock and
SecantusDB, a real wire-protocol server. The step's rollback runs each chain one item at a time:
it must wait for the tolerated item's undo in flight before it starts an earlier item of that
chain, go on with the chain once that undo ended, and undo every item exactly once.

The interleaving is forced by the order the items' outcomes are applied, as the modules and the
relay of each would apply them: two chains; item 2 (chain 0) fails within the budget and rolls
back on its own; item 5 (chain 1) fails past the budget, or an operator cancels the task before
item 5 is claimed, while item 2's undo still runs."""

from __future__ import annotations

import pytest

from common.engine.changes import cancel
from common.engine.kinds.for_each import records as fan_out
from common.engine.kinds.for_each.fields import Tolerance
from common.engine.states import Phase, StepState, TaskStatus
from common.store.items.open import open_item_store_for
from tests.contract.store_fixtures import real_mongo_client, real_mongo_url, subject  # noqa: F401
from tests.support.item_records import opened as _opened, relay as _relay, timing as _timing
from tests.unit.test_item_budget import FAILED, OK, _item
from common.store.tasks.mutate import mutate
from tests.unit.test_item_relay_races import _run

CHAINS, COUNT = 2, 6
TURNS = ["past_the_budget", "cancel"]


@pytest.fixture(autouse=True)
def records(monkeypatch):
    monkeypatch.setattr(fan_out, "RECORDS_ENABLED", True)


def _turned_back_while_a_tolerated_item_undoes(subject, turn: str):  # noqa: F811
    tasks, items = subject.store, open_item_store_for(subject.store)
    task = _opened(tasks, items, count=COUNT, parallel=CHAINS, tolerate=Tolerance(Count=1))
    relay = _relay(tasks, items)
    for item in (0, 1):
        relay.apply_owes(_run(tasks, items, task.TaskId, item, OK))
    relay.apply_owes(_run(tasks, items, task.TaskId, 2, FAILED))  # tolerated: its undo dispatched, item 4 started
    assert _item(items, task.TaskId, 2).State is StepState.ROLLING_BACK
    for item in (3, 4):
        relay.apply_owes(_run(tasks, items, task.TaskId, item, OK))
    if turn == "past_the_budget":
        relay.apply_owes(_run(tasks, items, task.TaskId, 5, FAILED))
    else:  # item 5 dispatched, not claimed: the cancel withdraws it (never ran, nothing to undo)
        cancelled = mutate(tasks, task.TaskId, lambda t: cancel(t, "op", "not today", _timing()))
        for entry in cancelled.Outbox:
            if entry.Kind == fan_out.CANCEL_ITEMS:
                relay.apply(task.TaskId, entry)
        assert _item(items, task.TaskId, 5).State is StepState.CANCELLED
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.ROLLING_BACK and stored.Steps[0].State is StepState.ROLLING_BACK
    return tasks, items, task, relay


def _rolling_back(items, task_id: str) -> list[int]:
    return [i for i in range(COUNT) if _item(items, task_id, i).State is StepState.ROLLING_BACK]


def _undo_until_done(tasks, items, task_id: str, relay, order: list[int]) -> list[int]:
    """End the rollbacks in flight, the one in `order` first while it rolls back, checking before
    each that no chain has two at once. The items undone, in the order they ended."""
    undone = []
    for _ in range(4 * COUNT):
        rolling = _rolling_back(items, task_id)
        if not rolling:
            return undone
        assert len({i % CHAINS for i in rolling}) == len(rolling), f"two rollbacks in one chain: {rolling}"
        item = next((i for i in order if i in rolling), rolling[0])
        assert _item(items, task_id, item).Run.Phase is Phase.ROLLBACK
        relay.apply_owes(_run(tasks, items, task_id, item, OK))
        undone.append(item)
    raise AssertionError(f"still rolling back: {_rolling_back(items, task_id)}")


@pytest.mark.parametrize("turn", TURNS)
def test_the_steps_rollback_waits_for_a_tolerated_items_undo_in_its_chain(subject, turn):  # noqa: F811
    tasks, items, task, relay = _turned_back_while_a_tolerated_item_undoes(subject, turn)
    # Chain 0's tolerated item 2 still undoes: its chain's earlier item 0 waits; chain 1 starts.
    assert _rolling_back(items, task.TaskId) == [1, 2]
    undone = _undo_until_done(tasks, items, task.TaskId, relay, order=[2])
    assert undone[0] == 2 and sorted(undone) == _undone(turn), undone  # item 2 by its own rollback only
    _rolled_back_each_once(tasks, items, task.TaskId, turn)


@pytest.mark.parametrize("turn", TURNS)
def test_a_chain_goes_on_from_its_first_item_when_the_tolerated_undo_ends_last(subject, turn):  # noqa: F811
    tasks, items, task, relay = _turned_back_while_a_tolerated_item_undoes(subject, turn)
    undone = _undo_until_done(tasks, items, task.TaskId, relay, order=[1, 3, 5])  # chain 1 ends first
    chain_one = [1, 3, 5] if turn == "past_the_budget" else [1, 3]
    assert undone == [*chain_one, 2, 0, 4], undone
    _rolled_back_each_once(tasks, items, task.TaskId, turn)


def _undone(turn: str) -> list[int]:
    return list(range(COUNT)) if turn == "past_the_budget" else list(range(COUNT - 1))


def _rolled_back_each_once(tasks, items, task_id: str, turn: str) -> None:
    stored = tasks.get(task_id)
    assert stored.TaskStatus is TaskStatus.ROLLED_BACK, stored.TaskMessage
    assert stored.Steps[0].State is StepState.ROLLED_BACK and not stored.Steps[0].ItemsOpen
    records = [_item(items, task_id, i) for i in _undone(turn)]
    assert [r.State for r in records] == [StepState.ROLLED_BACK] * len(records)
    assert [r.RollbackAttempts for r in records] == [1] * len(records), [r.RollbackAttempts for r in records]
    assert [r.Item for r in records if r.Tolerated] == [2]
    if hasattr(items, "close"):  # a SQLite item store's own connections
        items.close()
