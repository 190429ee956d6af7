"""A failure budget's places (docs/design/item-records.md, "A failure budget"), through the item
relay on a real SQLite store: items failing together are decided one after the other, each
counted once. Two items whose failures are both written before either is decided: the first
decided takes the budget's last place and rolls back on its own, the second is past the budget
(not both past it, each counting the other's failure as well as its own). A decision repeated (the
sweeper's relay, a redelivered outcome, another replica taking over) keeps the item's one place,
and relays deciding at once in threads of their own never give out more places than the budget."""

from __future__ import annotations

import threading

from common.engine.kinds.for_each.fields import Tolerance
from common.engine.kinds.for_each.item_tolerance import budget_place, take_budget_place
from common.engine.states import Phase, StepState, TaskStatus
from common.store.sqlite.items import SqliteItemStore
from common.store.sqlite.tasks import SqliteStore
from common.store.tasks.mutate import mutate
from tests.support.item_records import opened as _opened, relay as _relay, timing as _timing
from tests.unit.test_item_budget import FAILED, _drive, _held_task, _item
from tests.unit.test_item_relay_races import _run, stores  # noqa: F401 (a fixture)


def _fail_together(tasks, items, task_id: str, failing: list[int]) -> list:
    """Each item's failure written to its record, none of them decided yet."""
    written = [_run(tasks, items, task_id, item, FAILED) for item in failing]
    assert all(r.Owes == ["tolerate"] and r.State is StepState.FAILED for r in written)
    return written


def test_two_items_failing_together_take_the_last_place_one_after_the_other(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=6, parallel=2, tolerate=Tolerance(Count=1))
    first, second = _fail_together(tasks, items, task.TaskId, [0, 1])
    relay = _relay(tasks, items)
    relay.apply_owes(first)
    relay.apply_owes(second)

    stored = tasks.get(task.TaskId)
    assert stored.Steps[0].ToleratedItems == [0]
    assert _item(items, task.TaskId, 0).Tolerated  # within the budget: it took the one place
    assert not _item(items, task.TaskId, 1).Tolerated
    assert stored.TaskStatus is not TaskStatus.RUNNING and "item 1 failed" in stored.TaskMessage, stored.TaskMessage


def test_a_held_step_holds_on_the_item_past_the_budget_not_on_one_within_it(stores):
    tasks, items = stores
    task = _held_task(tasks, items, count=8, parallel=4, tolerate=Tolerance(Count=3))
    written = _fail_together(tasks, items, task.TaskId, [0, 1, 2, 3])
    relay = _relay(tasks, items)
    for record in written:
        relay.apply_owes(record)

    stored = tasks.get(task.TaskId)
    assert stored.Held is not None and stored.Held.Item == 3, stored.TaskMessage
    assert stored.Steps[0].ToleratedItems == [0, 1, 2]
    assert [_item(items, task.TaskId, i).Tolerated for i in range(4)] == [True, True, True, False]


def test_a_repeated_decision_keeps_the_items_one_place(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=6, parallel=2, tolerate=Tolerance(Count=2))
    (failed,) = _fail_together(tasks, items, task.TaskId, [0])
    _relay(tasks, items).apply_owes(failed)
    _relay(tasks, items).apply_owes(failed)  # another relay repeats it, from the record as it was
    assert tasks.get(task.TaskId).Steps[0].ToleratedItems == [0]
    # Taking the place again is refused, and the place read is the same.
    now = tasks.get(task.TaskId)
    assert "holds a place" in take_budget_place(now, 0, 0).reason
    assert budget_place(now, 0, 0) == 1 and budget_place(now, 0, 1) is None
    # The next failure takes the second place; after it the budget is full.
    (second,) = _fail_together(tasks, items, task.TaskId, [1])
    _relay(tasks, items).apply_owes(second)
    full = tasks.get(task.TaskId)
    assert full.Steps[0].ToleratedItems == [0, 1]
    assert "past the budget" in take_budget_place(full, 0, 4).reason


def test_a_retried_task_starts_its_budget_again(stores):
    from common.engine.operator.actions import retry

    tasks, items = stores
    task = _opened(tasks, items, count=4, parallel=2, tolerate=Tolerance(Count=1))
    _drive(tasks, items, task.TaskId, {(0, Phase.NORMAL): FAILED, (1, Phase.NORMAL): FAILED})
    ended = tasks.get(task.TaskId)
    assert ended.TaskStatus is TaskStatus.ROLLED_BACK and ended.Steps[0].ToleratedItems == [0]
    retried = mutate(tasks, task.TaskId, lambda t: retry(t, "dana", "again", _timing()))
    assert retried.Generation == 1 and retried.Steps[0].ToleratedItems is None


def test_an_item_whose_task_turns_backward_after_it_took_its_place_is_left_to_the_steps_rollback(stores):
    """The place and the record's decision are two writes. Between them, another item past the
    budget may turn the task backward, and the step's rollback take the record first: the item
    keeps its place (counted once), and is rolled back once, with the step, not as tolerated."""
    tasks, items = stores
    task = _opened(tasks, items, count=4, parallel=2, tolerate=Tolerance(Count=1))
    first, second = _fail_together(tasks, items, task.TaskId, [0, 1])
    items.between["compare_and_set_item"] = lambda: _relay(tasks, items).apply_owes(second)
    _relay(tasks, items).apply_owes(first)  # item 0 takes the one place, then item 1 is decided

    stored = tasks.get(task.TaskId)
    assert stored.Steps[0].ToleratedItems == [0]
    assert stored.TaskStatus is TaskStatus.ROLLING_BACK
    record = _item(items, task.TaskId, 0)
    assert not record.Tolerated and record.State is StepState.ROLLING_BACK and record.Owes == []


def test_relays_deciding_at_once_give_out_no_more_places_than_the_budget(stores, tmp_path):
    tasks, items = stores
    failing = list(range(6))
    task = _opened(tasks, items, count=12, parallel=6, tolerate=Tolerance(Count=3))
    written = _fail_together(tasks, items, task.TaskId, failing)
    go = threading.Barrier(len(written))
    errors: list[BaseException] = []

    def decide(record) -> None:  # a replica of its own: its own connections to the same file
        own_tasks, own_items = SqliteStore(tmp_path / "t.db"), SqliteItemStore(tmp_path / "t.db")
        try:
            go.wait()
            _relay(own_tasks, own_items).apply_owes(record)
        except BaseException as error:  # noqa: BLE001 (reported below)
            errors.append(error)
        finally:
            own_items.close()

    threads = [threading.Thread(target=decide, args=(record,)) for record in written]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors

    places = tasks.get(task.TaskId).Steps[0].ToleratedItems
    assert len(places) == 3 and len(set(places)) == 3, places
    records = {i: _item(items, task.TaskId, i) for i in failing}
    assert {i for i, record in records.items() if record.Tolerated} <= set(places)
    # A place whose item is not tolerated: the task turned backward between the place and the
    # item's decision (the test above), and the step's rollback took the record.
    assert all(records[i].Tolerated or records[i].State is StepState.ROLLING_BACK for i in places), records
