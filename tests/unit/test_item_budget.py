"""A for_each step's failure budget, and its hold and redrive, over item records (docs/design/item-records.md, "A failure
budget"), through the item relay on a real SQLite store: within the budget a failed item rolls
back on its own and the step succeeds with failed items; past it the task goes backward and a
tolerated item is not rolled back twice; a tolerated item whose rollback fails sends the task
backward. With `on_failure: hold` a failure holds the task (nothing rolled back, nothing new
started) until an operator redrives it (only the failed and never-started items run), rolls it
back, or skips the failed item."""

from __future__ import annotations

from collections import Counter

from common.engine.kinds.for_each.budget import budget
from common.engine.kinds.for_each.fields import Tolerance
from common.engine.states import Phase, ResultCode, StepState, TaskStatus
from common.engine.core.entries import AttemptResult
from tests.support.item_records import opened as _opened, relay as _relay, timing as _timing
from tests.unit.test_item_relay_races import _run, stores  # noqa: F401 (a fixture)

OK = AttemptResult(ResultCode.OK, output={"done": True})
FAILED = AttemptResult(ResultCode.FAILED, "host down", retryable=False)
UNDO_FAILED = AttemptResult(ResultCode.FAILED, "undo broke", retryable=False)


def _item(items, task_id: str, item: int):
    return items.get_item(task_id, 0, 0, item)


def _drive(tasks, items, task_id: str, outcomes: dict[tuple[int, Phase], AttemptResult], limit: int = 200) -> list:
    """Run every dispatched run of the step (normal: OK unless `outcomes` says; rollback: OK
    unless it says), applying what each owes, until nothing is dispatched. What ran, in order."""
    relay, ran = _relay(tasks, items), []
    for _ in range(limit):
        task = tasks.get(task_id)
        pending = [r for r in (_item(items, task_id, i) for i in range(task.Steps[0].ItemCount)) if r.Run is not None
                   and not (task.Paused is not None and r.Run.Phase is Phase.NORMAL)]  # a claim refused while held
        if not pending:
            return ran
        record = pending[0]
        phase = record.Run.Phase
        ran.append((record.Item, phase))
        relay.apply_owes(_run(tasks, items, task_id, record.Item, outcomes.get((record.Item, phase), OK)))
    raise AssertionError("never settled")


def _claim(tasks, items, task_id: str, item: int):
    from common.engine.kinds.for_each.item_changes import claim_item

    record = _item(items, task_id, item)
    claimed = claim_item(record, tasks.get(task_id), record.Run.DispatchId, "me", _timing())
    claimed.Version = record.Version + 1
    assert items.compare_and_set_item(claimed, record.Version)
    return claimed


def _finish(tasks, items, task_id: str, claimed, result: AttemptResult):
    from common.engine.core.units import new_id
    from common.engine.kinds.for_each.item_changes import finish_item_attempt

    done = finish_item_attempt(claimed, tasks.get(task_id), claimed.Run.DispatchId, "me", result, _timing(), new_id)
    done.Version = claimed.Version + 1
    assert items.compare_and_set_item(done, claimed.Version)
    return done


def test_the_budget_in_items_and_percent():
    assert budget(Tolerance(Count=3), 10_000) == 3
    assert budget(Tolerance(Percent=1), 1000) == 10 and budget(Tolerance(Percent=1), 99) == 0
    assert budget(None, 100) == 0 and budget(Tolerance(Percent=10), 30) == 3


def test_within_the_budget_each_failed_item_rolls_back_once_and_the_task_succeeds_with_failed_items(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=8, parallel=2, tolerate=Tolerance(Count=2))
    ran = _drive(tasks, items, task.TaskId, {(1, Phase.NORMAL): FAILED, (4, Phase.NORMAL): FAILED})

    assert Counter(ran) == Counter([(i, Phase.NORMAL) for i in range(8)] + [(1, Phase.ROLLBACK), (4, Phase.ROLLBACK)])
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.SUCCESS, stored.TaskMessage
    assert stored.FailedItems == 2 and stored.Steps[0].FailedItems == 2
    assert stored.TaskMessage == "succeeded with 2 failed items (each)"
    assert [_item(items, task.TaskId, i).State for i in (1, 4)] == [StepState.ROLLED_BACK] * 2
    assert all(_item(items, task.TaskId, i).Tolerated for i in (1, 4))
    assert _item(items, task.TaskId, 1).Code is ResultCode.FAILED  # recorded failed, and why
    assert _item(items, task.TaskId, 1).Message == "host down"
    assert stored.Parameters["each"][1] == {} and stored.Parameters["each"][0] == {"done": True}


def test_past_the_budget_the_task_rolls_back_and_a_tolerated_item_is_not_rolled_back_twice(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=8, parallel=2, tolerate=Tolerance(Count=1))
    ran = _drive(tasks, items, task.TaskId, {(1, Phase.NORMAL): FAILED, (3, Phase.NORMAL): FAILED})

    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.ROLLED_BACK, stored.TaskMessage
    assert "item 3 failed: host down" in stored.TaskMessage
    undone = Counter(item for item, phase in ran if phase is Phase.ROLLBACK)
    applied = {item for item, phase in ran if phase is Phase.NORMAL}
    assert set(undone) == applied and set(undone.values()) == {1}  # every item that ran, once
    assert stored.FailedItems is None


def test_a_tolerated_item_whose_rollback_fails_sends_the_task_backward(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=4, parallel=2, tolerate=Tolerance(Percent=50))
    _drive(tasks, items, task.TaskId, {(0, Phase.NORMAL): FAILED, (0, Phase.ROLLBACK): UNDO_FAILED})

    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.ROLLBACK_FAILED, stored.TaskMessage
    assert _item(items, task.TaskId, 0).State is StepState.ROLLBACK_FAILED


def test_a_repeated_decision_changes_nothing(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=4, parallel=2, tolerate=Tolerance(Count=1))
    relay = _relay(tasks, items)
    failed = _run(tasks, items, task.TaskId, 0, FAILED)
    assert failed.Open and failed.Owes == ["tolerate"]
    relay.apply_owes(failed)  # decided: its rollback dispatched, its chain's next item started
    relay.apply_owes(failed)  # the sweeper repeats it, from the record as it was
    record = _item(items, task.TaskId, 0)
    assert record.State is StepState.ROLLING_BACK and record.Run.Attempt == 1 and record.Owes == []
    assert [h.Event for h in record.History].count("tolerated") == 1
    assert _item(items, task.TaskId, 2).State is StepState.RUNNING


def test_a_task_that_succeeded_with_failed_items_tells_its_webhooks_so(stores):
    from common.engine.core.notifications import task_events

    tasks, items = stores
    task = _opened(tasks, items, count=4, parallel=2, tolerate=Tolerance(Count=1))
    before = tasks.get(task.TaskId)
    _drive(tasks, items, task.TaskId, {(2, Phase.NORMAL): FAILED})
    after = tasks.get(task.TaskId)
    assert task_events(before, after) == ["succeeded", "succeeded_with_failed_items"]
    clean = after.clone()
    clean.FailedItems = None
    assert task_events(before, clean) == ["succeeded"]


# --- on_failure: hold, and an operator's redrive or rollback ------------------------------------


def _held_task(tasks, items, count=6, parallel=2, tolerate=None):
    return _opened(tasks, items, count=count, parallel=parallel, tolerate=tolerate, on_failure="hold")


def _act(tasks, items, task_id, action):
    """An operator's action written as the service writes it, then its item entries flushed."""
    from common.engine.changes import Refusal
    from common.store.tasks.mutate import mutate

    changed = mutate(tasks, task_id, lambda t: action(t, "dana", "looked at it", _timing()))
    if not isinstance(changed, Refusal):
        relay = _relay(tasks, items)
        for entry in changed.Outbox:
            if entry.Kind in ("redrive_items", "cancel_items", "rollback_items"):
                relay.apply(task_id, entry)
    return changed


def test_a_held_step_rolls_nothing_back_starts_nothing_new_and_waits(stores):
    tasks, items = stores
    task = _held_task(tasks, items)
    ran = _drive(tasks, items, task.TaskId, {(1, Phase.NORMAL): FAILED})
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.RUNNING and stored.Held is not None
    assert (stored.Held.Cursor, stored.Held.Item, stored.Held.Message) == (0, 1, "host down")
    assert stored.Paused.Actor == "baton" and "item 1 failed: host down" in stored.Paused.Reason
    assert stored.TaskMessage == "held: step 0 (each) item 1 failed: host down"
    assert not [r for r in ran if r[1] is Phase.ROLLBACK]  # nothing rolled back
    # Item 1's chain stopped at it; item 2, dispatched before the failure, is not claimed (its claim
    # is refused while held); nothing after them started.
    assert [_item(items, task.TaskId, i).State for i in range(6)] == [
        StepState.SUCCEEDED, StepState.FAILED, StepState.RUNNING, StepState.WAITING, StepState.WAITING,
        StepState.WAITING]
    assert _item(items, task.TaskId, 2).Run.State.value == "pending"
    assert stored.Steps[0].State is StepState.RUNNING  # not settled: it waits


def test_redrive_reruns_only_the_failed_and_never_started_items_and_the_task_succeeds(stores):
    from common.engine.changes import redrive, resume

    tasks, items = stores
    task = _held_task(tasks, items)
    first = _drive(tasks, items, task.TaskId, {(1, Phase.NORMAL): FAILED})
    assert "held" in resume(tasks.get(task.TaskId), "dana", "go", _timing()).reason
    _act(tasks, items, task.TaskId, redrive)
    second = _drive(tasks, items, task.TaskId, {})
    assert sorted(second) == [(i, Phase.NORMAL) for i in range(1, 6)]
    assert Counter(i for i, _ in first + second) == Counter({0: 1, 1: 2, 2: 1, 3: 1, 4: 1, 5: 1})
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.SUCCESS and stored.Held is None and stored.Paused is None
    assert _item(items, task.TaskId, 1).Attempts == 2  # a new attempt of the same unit
    assert [e.Actor for e in stored.History if e.Event == "redriven"] == ["dana"]
    # A second operator's redrive, a moment later, is refused: the task is no longer held.
    assert "not held" in redrive(stored, "erin", "me too", _timing()).reason


def test_a_redriven_item_failing_again_holds_again_and_rollback_undoes_the_applied_items(stores):
    from common.engine.changes import redrive, rollback

    tasks, items = stores
    task = _held_task(tasks, items)
    _drive(tasks, items, task.TaskId, {(1, Phase.NORMAL): FAILED})
    _act(tasks, items, task.TaskId, redrive)
    _drive(tasks, items, task.TaskId, {(1, Phase.NORMAL): FAILED})
    assert tasks.get(task.TaskId).Held is not None  # held again
    _act(tasks, items, task.TaskId, rollback)
    undone = _drive(tasks, items, task.TaskId, {})
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.ROLLED_BACK and stored.Held is None, stored.TaskMessage
    assert sorted(i for i, phase in undone if phase is Phase.ROLLBACK) == [0, 1]  # each applied item once
    assert _item(items, task.TaskId, 2).State is StepState.CANCELLED  # dispatched, never claimed


def test_a_failed_item_of_a_held_task_may_be_skipped(stores):
    from common.engine.changes import redrive, skip_item

    tasks, items = stores
    task = _held_task(tasks, items)
    _drive(tasks, items, task.TaskId, {(1, Phase.NORMAL): FAILED})
    relay = _relay(tasks, items)
    skipped = relay.change_item(_item(items, task.TaskId, 1),
                                lambda r: skip_item(r, tasks.get(task.TaskId), "dana", "gone for good", _timing()))
    assert skipped.State is StepState.OPERATOR_SKIPPED
    _act(tasks, items, task.TaskId, redrive)
    ran = _drive(tasks, items, task.TaskId, {})
    assert sorted(ran) == [(i, Phase.NORMAL) for i in range(2, 6)]
    assert tasks.get(task.TaskId).TaskStatus is TaskStatus.SUCCESS


def test_an_item_failing_while_held_waits_failed_and_a_repeated_redrive_runs_each_failed_item_once(stores):
    from common.engine.changes import redrive

    tasks, items = stores
    task = _held_task(tasks, items, count=6, parallel=3)
    # Items 0, 1, 2 start together: 1 fails and holds the task, 2 (claimed before) fails while held.
    relay = _relay(tasks, items)
    claimed = {i: _claim(tasks, items, task.TaskId, i) for i in (1, 2)}
    for i in (1, 2):
        relay.apply_owes(_finish(tasks, items, task.TaskId, claimed[i], FAILED))
    stored = tasks.get(task.TaskId)
    assert stored.Held.Item == 1 and [e.Event for e in stored.History].count("held") == 1
    assert _item(items, task.TaskId, 2).State is StepState.FAILED and not _item(items, task.TaskId, 2).Open
    redriven = _act(tasks, items, task.TaskId, redrive)
    (entry,) = [e for e in redriven.Outbox if e.Kind == "redrive_items"]
    relay.apply(task.TaskId, entry)  # the sweeper's relay repeats the entry
    assert [_item(items, task.TaskId, i).Run.Attempt for i in (1, 2)] == [2, 2]  # dispatched once each
    ran = _drive(tasks, items, task.TaskId, {})
    assert sorted(i for i, _ in ran) == [0, 1, 2, 3, 4, 5]
    assert tasks.get(task.TaskId).TaskStatus is TaskStatus.SUCCESS


def test_a_cancel_of_a_held_task_lifts_the_hold_and_rolls_back_what_ran(stores):
    from common.engine.changes import cancel

    tasks, items = stores
    task = _held_task(tasks, items)
    _drive(tasks, items, task.TaskId, {(1, Phase.NORMAL): FAILED})
    _act(tasks, items, task.TaskId, cancel)
    undone = _drive(tasks, items, task.TaskId, {})
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.ROLLED_BACK and stored.Held is None and stored.Paused is None
    assert sorted(i for i, phase in undone if phase is Phase.ROLLBACK) == [0, 1]


def test_a_held_task_tells_its_webhooks_once(stores):
    from common.engine.core.notifications import task_events

    tasks, items = stores
    task = _held_task(tasks, items)
    before = tasks.get(task.TaskId)
    _drive(tasks, items, task.TaskId, {(1, Phase.NORMAL): FAILED})
    held = tasks.get(task.TaskId)
    assert task_events(before, held) == ["held"]
    assert task_events(held, held) == []
