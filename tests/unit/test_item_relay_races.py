"""The item relay's races on a real SQLite store (docs/design/item-records.md, "The life of a step
over records" and "What still holds"), each interleaving forced at the one point where it happens,
so each runs the same way every time.

- Two "is the step done?" asks overlap: the first decided on the step going forward, the second
  concluded that direction and the step's rollback began; the first's conclusion must not be
  written over the rollback (the step rolled back while its items were still rolling back).
- A rollback entry applied again (the sweeper's relay repeating it after the committing process
  was slow or died, a duplicated delivery): each chain keeps one item rolling back at a time.
- An operator's retry-rollback entry applied again: likewise; and an item whose retried rollback
  failed again, or whose rollback began after the operator's action and failed, is not retried
  (nor compensated, for a compensate entry) by the repeat: only a new operator action does that.
- A chain's next rollback starts just as another item's rollback fails for good and the step
  concludes `rollback_failed`: no rollback may be left dispatched under the concluded step.
- A chain's next item starts on a task read just before it went backward (the step ended
  without it): the start is taken back, nothing of it left after the task's end.
- The step's records are inserted late (their writer died; the sweeper's relay repeats the entry)
  after the task went backward and the step ended without them: no item of it may be dispatched.
"""

from __future__ import annotations

import time

import pytest

from common.engine.document import Task
from common.engine.kinds.for_each.item_record import ItemRecord
from common.engine.kinds.for_each import records as fan_out
from common.engine.kinds.for_each.records import inline_view, start_rollback
from common.engine.kinds.for_each.changes import item_failed
from common.engine.kinds.for_each.item_changes import claim_item, finish_item_attempt
from common.engine.operator.actions import cancel, compensate, retry_rollback
from common.engine.states import Phase, ResultCode, StepState, TaskStatus
from common.engine.core.entries import AttemptResult, create_task
from common.engine.core.units import new_id
from common.relay.items import ItemRelay
from common.store.sqlite.items import SqliteItemStore
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from tests.chaos.invariants import check_task
from tests.support.builders import make_step
from tests.support.item_records import opened as _opened, relay as _relay, timing as _timing


class Interleaved(SqliteItemStore):
    """The real SQLite item store; `between[name]` runs once, when the store's method `name` is
    next called: the other side's moves, forced into the one window where they race."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.between = {}

    def _once(self, name: str) -> None:
        hook = self.between.pop(name, None)
        if hook is not None:
            hook()

    def count_by_state(self, *args, **kwargs):  # after the look-ups found the step done, before its write
        self._once("count_by_state")
        return super().count_by_state(*args, **kwargs)

    def get_item(self, *args, **kwargs):  # a chain's next item, read after its task was
        self._once("get_item")
        return super().get_item(*args, **kwargs)

    def insert_items(self, *args, **kwargs):  # a step's records, after the opening read its task
        self._once("insert_items")
        return super().insert_items(*args, **kwargs)

    def page_items(self, *args, **kwargs):  # a chain's next applied item, after the failure check
        self._once("page_items")
        return super().page_items(*args, **kwargs)

    def compare_and_set_item(self, *args, **kwargs):  # a record's decision, after what it read
        self._once("compare_and_set_item")
        return super().compare_and_set_item(*args, **kwargs)


@pytest.fixture
def stores(tmp_path, monkeypatch):
    monkeypatch.setattr(fan_out, "RECORDS_ENABLED", True)
    tasks, items = SqliteStore(tmp_path / "t.db"), Interleaved(tmp_path / "t.db")
    yield tasks, items
    items.close()
    tasks.close()


def _run(tasks, items, task_id: str, item: int, result: AttemptResult) -> ItemRecord:
    """A module's claim and outcome of the item's current run, written to its record."""
    task = tasks.get(task_id)
    record = items.get_item(task_id, 0, 0, item)
    claimed = claim_item(record, task, record.Run.DispatchId, "me", _timing())
    claimed.Version = record.Version + 1
    assert items.compare_and_set_item(claimed, record.Version)
    done = finish_item_attempt(claimed, tasks.get(task_id), claimed.Run.DispatchId, "me", result, _timing(), new_id)
    done.Version = claimed.Version + 1
    assert items.compare_and_set_item(done, claimed.Version)
    return done


def _states(items, task_id: str, count: int) -> list[StepState]:
    return [items.get_item(task_id, 0, 0, i).State for i in range(count)]


OK = AttemptResult(ResultCode.OK)
FAILED = AttemptResult(ResultCode.FAILED, "boom", retryable=False)


def test_a_stale_end_of_the_forward_part_is_not_written_over_the_steps_rollback(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=2, parallel=2)
    _run(tasks, items, task.TaskId, 0, OK)
    _run(tasks, items, task.TaskId, 1, FAILED)
    mutate(tasks, task.TaskId, lambda t: item_failed(t, 0, 1, "boom", _timing(), "relay"))  # its notice
    first, second = _relay(tasks, items), _relay(tasks, items)
    # The first ask found no item running forward; before it writes, the second ask concludes the
    # forward part, and the step's rollback starts both applied items' rollbacks.
    items.between["count_by_state"] = lambda: second.check_settled(task.TaskId, 0)
    first.check_settled(task.TaskId, 0)

    assert _states(items, task.TaskId, 2) == [StepState.ROLLING_BACK, StepState.ROLLING_BACK]
    stored = tasks.get(task.TaskId)
    assert stored.Steps[0].State is StepState.ROLLING_BACK and stored.Steps[0].ItemsOpen
    assert stored.TaskStatus is TaskStatus.ROLLING_BACK


def _all_applied_and_rolling_back(tasks, items, count: int, parallel: int) -> tuple[Task, ItemRelay]:
    """Every item succeeded (each chain started its next item), then the step's rollback began."""
    task = _opened(tasks, items, count, parallel)
    relay = _relay(tasks, items)
    for item in range(count):
        relay.apply_owes(_run(tasks, items, task.TaskId, item, OK), check_settled=False)

    def roll_back(t: Task) -> Task:
        new = t.clone()
        new.TaskStatus, new.Steps[0].State, new.Steps[0].ItemsOpen = TaskStatus.ROLLING_BACK, StepState.SUCCEEDED, False
        start_rollback(new, 0, time.time())
        return new

    return mutate(tasks, task.TaskId, roll_back), relay


def test_a_rollback_entry_applied_again_keeps_one_item_of_each_chain_rolling_back(stores):
    tasks, items = stores
    task, relay = _all_applied_and_rolling_back(tasks, items, count=6, parallel=2)
    (entry,) = [e for e in task.Outbox if e.Kind == fan_out.ROLLBACK_ITEMS]
    relay.apply(task.TaskId, entry)
    assert _states(items, task.TaskId, 6)[:2] == [StepState.ROLLING_BACK] * 2
    relay.apply(task.TaskId, entry)  # a repeat: nothing more starts
    assert _states(items, task.TaskId, 6)[2:] == [StepState.SUCCEEDED] * 4

    # Item 0's rollback ends and its chain goes on to item 2; a repeat now starts nothing either.
    relay.apply_owes(_run(tasks, items, task.TaskId, 0, OK), check_settled=False)
    relay.apply(task.TaskId, entry)
    assert _states(items, task.TaskId, 6) == [StepState.ROLLED_BACK, StepState.ROLLING_BACK, StepState.ROLLING_BACK,
                                              StepState.SUCCEEDED, StepState.SUCCEEDED, StepState.SUCCEEDED]


def test_a_rollback_entry_applied_after_the_step_rolled_back_starts_nothing(stores):
    tasks, items = stores
    task, relay = _all_applied_and_rolling_back(tasks, items, count=2, parallel=2)
    (entry,) = [e for e in task.Outbox if e.Kind == fan_out.ROLLBACK_ITEMS]
    relay.apply(task.TaskId, entry)
    for item in range(2):
        relay.apply_owes(_run(tasks, items, task.TaskId, item, OK))
    assert tasks.get(task.TaskId).Steps[0].State is StepState.ROLLED_BACK
    relay.apply(task.TaskId, entry)
    assert _states(items, task.TaskId, 2) == [StepState.ROLLED_BACK] * 2
    assert all(items.get_item(task.TaskId, 0, 0, i).Run is None for i in range(2))


def test_an_operators_retry_rollback_entry_applied_again_keeps_one_item_of_each_chain_rolling_back(stores):
    tasks, items = stores
    task, relay = _all_applied_and_rolling_back(tasks, items, count=6, parallel=2)
    (entry,) = [e for e in task.Outbox if e.Kind == fan_out.ROLLBACK_ITEMS]
    relay.apply(task.TaskId, entry)
    relay.apply_owes(_run(tasks, items, task.TaskId, 0, FAILED))  # no new rollback starts after it
    relay.apply_owes(_run(tasks, items, task.TaskId, 1, OK))
    assert tasks.get(task.TaskId).Steps[0].State is StepState.ROLLBACK_FAILED

    retried = mutate(tasks, task.TaskId, lambda t: retry_rollback(t, "op", "fixed by hand", _timing()))
    (reopen,) = [e for e in retried.Outbox if e.Kind == fan_out.REOPEN_ROLLBACKS]
    relay.apply(task.TaskId, reopen)  # item 0's rollback again, and chain 1 goes on to item 3
    expected = [StepState.ROLLING_BACK, StepState.ROLLED_BACK, StepState.SUCCEEDED, StepState.ROLLING_BACK,
                StepState.SUCCEEDED, StepState.SUCCEEDED]
    assert _states(items, task.TaskId, 6) == expected
    relay.apply(task.TaskId, reopen)  # a repeat: items 2 and 5 wait for their chain's turn
    assert _states(items, task.TaskId, 6) == expected
    assert items.get_item(task.TaskId, 0, 0, 0).Run.Phase is Phase.ROLLBACK


def _events(items, task_id: str, item: int, name: str) -> int:
    return sum(e.Event == name for e in items.get_item(task_id, 0, 0, item).History)


def test_a_repeated_reopen_entry_leaves_alone_the_rollbacks_that_failed_after_the_operators_action(stores):
    tasks, items = stores
    task, relay = _all_applied_and_rolling_back(tasks, items, count=6, parallel=2)
    (entry,) = [e for e in task.Outbox if e.Kind == fan_out.ROLLBACK_ITEMS]
    relay.apply(task.TaskId, entry)
    relay.apply_owes(_run(tasks, items, task.TaskId, 0, FAILED))
    relay.apply_owes(_run(tasks, items, task.TaskId, 1, OK))
    retried = mutate(tasks, task.TaskId, lambda t: retry_rollback(t, "op", "fixed by hand", _timing()))
    (reopen,) = [e for e in retried.Outbox if e.Kind == fan_out.REOPEN_ROLLBACKS]
    relay.apply(task.TaskId, reopen)  # item 0 again; chain 1 goes on to item 3
    relay.apply_owes(_run(tasks, items, task.TaskId, 0, FAILED))  # fails again while item 3 rolls back
    relay.apply(task.TaskId, reopen)  # delivered again: item 0's failure came after the action
    assert _states(items, task.TaskId, 6) == [StepState.ROLLBACK_FAILED, StepState.ROLLED_BACK, StepState.SUCCEEDED,
                                              StepState.ROLLING_BACK, StepState.SUCCEEDED, StepState.SUCCEEDED]
    assert items.get_item(task.TaskId, 0, 0, 0).Run is None and _events(items, task.TaskId, 0, "rollback_retried") == 1
    relay.apply_owes(_run(tasks, items, task.TaskId, 3, FAILED))  # began under the action, failed after it
    assert tasks.get(task.TaskId).TaskStatus is TaskStatus.ROLLBACK_FAILED

    # Compensated: items 0 and 3 pass, their chains go on to items 2 and 5.
    compensated = mutate(tasks, task.TaskId, lambda t: compensate(t, "op", "undone by hand", _timing()))
    (again,) = [e for e in compensated.Outbox if e.Kind == fan_out.REOPEN_ROLLBACKS and e.DispatchId != reopen.DispatchId]
    relay.apply(task.TaskId, again)
    relay.apply(task.TaskId, reopen)  # the earlier action's entry, late: moot once another took over
    assert _states(items, task.TaskId, 6) == [StepState.COMPENSATED, StepState.ROLLED_BACK, StepState.ROLLING_BACK,
                                              StepState.COMPENSATED, StepState.SUCCEEDED, StepState.ROLLING_BACK]
    relay.apply_owes(_run(tasks, items, task.TaskId, 2, FAILED))  # its rollback began after the compensate
    relay.apply(task.TaskId, again)  # a repeat does not compensate it: the operator never saw it fail
    assert items.get_item(task.TaskId, 0, 0, 2).State is StepState.ROLLBACK_FAILED
    assert items.get_item(task.TaskId, 0, 0, 5).State is StepState.ROLLING_BACK  # started once, still running
    relay.apply_owes(_run(tasks, items, task.TaskId, 5, OK))
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.ROLLBACK_FAILED and _events(items, task.TaskId, 2, "compensated") == 0


def test_a_chains_next_rollback_started_as_another_fails_for_good_is_withdrawn(stores):
    tasks, items = stores
    task, relay = _all_applied_and_rolling_back(tasks, items, count=4, parallel=2)
    (entry,) = [e for e in task.Outbox if e.Kind == fan_out.ROLLBACK_ITEMS]
    relay.apply(task.TaskId, entry)  # items 0 and 1 roll back
    rolled_back = _run(tasks, items, task.TaskId, 0, OK)
    # Item 0's end found no failed rollback; before it starts item 2, item 1's rollback fails
    # for good and the step concludes (nothing else rolling back).
    items.between["page_items"] = lambda: relay.apply_owes(_run(tasks, items, task.TaskId, 1, FAILED))
    relay.apply_owes(rolled_back)

    stored = tasks.get(task.TaskId)
    assert stored.Steps[0].State is StepState.ROLLBACK_FAILED and stored.TaskStatus is TaskStatus.ROLLBACK_FAILED
    held = items.get_item(task.TaskId, 0, 0, 2)
    assert held.State is StepState.SUCCEEDED and held.Run is None and held.Outbox == []  # applied, as inline
    assert _states(items, task.TaskId, 4) == [StepState.ROLLED_BACK, StepState.ROLLBACK_FAILED,
                                              StepState.SUCCEEDED, StepState.SUCCEEDED]
    # Nothing of the taken-back start is left in the history: no event after the task's final one.
    violations, _ = check_task(inline_view(stored, {0: items.page_items(task.TaskId, 0, 0, limit=10)}))
    assert [v for v in violations if v.rule == "forward"] == []


def test_records_inserted_after_the_task_went_backward_dispatch_nothing(stores):
    tasks, items = stores
    step = make_step("each")
    step.ForEach, step.MaxParallel, step.After = "hosts", 2, []
    task = create_task(task_type="t", steps=[step], parameters={"hosts": ["h0", "h1", "h2"]}, timing=_timing())
    tasks.insert(task)
    (opening,) = task.Outbox  # its writer died before applying it
    relay = _relay(tasks, items, sent={opening.DispatchId})
    # The operator cancels; the cancel's entry finds no record and the step ends at once.
    cancelled = mutate(tasks, task.TaskId, lambda t: cancel(t, "op", "not today", _timing()))
    for entry in cancelled.Outbox:
        if entry.Kind == fan_out.CANCEL_ITEMS:
            relay.apply(task.TaskId, entry)
    assert tasks.get(task.TaskId).TaskStatus is TaskStatus.ROLLED_BACK

    relay.apply(task.TaskId, opening)  # the sweeper's relay repeats the opening entry
    records = items.page_items(task.TaskId, 0, 0, limit=10)
    assert all(r.Run is None and r.Outbox == [] and r.State is StepState.WAITING for r in records)


def test_records_inserted_as_the_task_goes_backward_have_their_dispatches_taken_back(stores):
    tasks, items = stores
    step = make_step("each")
    step.ForEach, step.MaxParallel, step.After = "hosts", 2, []
    task = create_task(task_type="t", steps=[step], parameters={"hosts": ["h0", "h1", "h2"]}, timing=_timing())
    tasks.insert(task)
    (opening,) = task.Outbox
    relay = _relay(tasks, items, sent={opening.DispatchId})
    # The opening read the task going forward; before its records are written the operator
    # cancels, and the cancel's entry finds no record to withdraw.
    def cancel_now():
        cancelled = mutate(tasks, task.TaskId, lambda t: cancel(t, "op", "not today", _timing()))
        for entry in cancelled.Outbox:
            if entry.Kind == fan_out.CANCEL_ITEMS:
                relay.apply(task.TaskId, entry)

    items.between["insert_items"] = cancel_now
    relay.apply(task.TaskId, opening)
    records = items.page_items(task.TaskId, 0, 0, limit=10)
    assert tasks.get(task.TaskId).TaskStatus is TaskStatus.ROLLED_BACK
    # Never published: taken back without a trace, so nothing follows the task's final event.
    assert all(r.State is StepState.WAITING and r.Run is None and r.Outbox == [] and r.History == []
               for r in records)


def test_a_successor_started_on_a_task_read_before_it_went_backward_is_taken_back(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=3, parallel=1)
    relay = _relay(tasks, items)
    done = _run(tasks, items, task.TaskId, 0, OK)

    def cancel_now():  # the operator cancels after item 0's notice read its task
        cancelled = mutate(tasks, task.TaskId, lambda t: cancel(t, "op", "not today", _timing()))
        for entry in cancelled.Outbox:
            if entry.Kind == fan_out.CANCEL_ITEMS:
                relay.apply(task.TaskId, entry)

    items.between["get_item"] = cancel_now
    relay.apply_owes(done)
    following = items.get_item(task.TaskId, 0, 0, 1)
    assert following.State is StepState.WAITING and following.Run is None and following.History == []
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.ROLLING_BACK and stored.Steps[0].State is StepState.ROLLING_BACK
    assert items.get_item(task.TaskId, 0, 0, 0).State is StepState.ROLLING_BACK  # its rollback began
