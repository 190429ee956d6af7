"""A command's "not done yet, check again in N seconds" as a pure transition
(docs/design/operations.md): no attempt counted, the next check due later in the outbox, `max_wait`
failing the unit like a timeout, for a plain step and for one item of a for_each step."""

from __future__ import annotations
import pytest

from common.engine.core.check_again import check_again, parse_answer
from common.engine.document import StepMessage
from common.engine.states import Phase, ResultCode, RunState, StepState, TaskStatus
from common.engine.core.entries import AttemptResult, Refusal, Timing, cancel_message, claim, create_task, finish_attempt
from common.engine.operator.actions import cancel
from tests.support.builders import counter_ids, make_step

N, R = Phase.NORMAL, Phase.ROLLBACK
IDS = counter_ids("c")


def waiting(seconds: float, progress: str = "") -> AttemptResult:
    return AttemptResult(ResultCode.OK, progress, check_again=seconds)


def line(max_wait: float | None = None, retry: int = 0):
    steps = [make_step("a"), make_step("wait", retry=retry), make_step("c")]
    steps[1].MaxWait = max_wait
    return steps


def new(steps, parameters=None):
    return create_task(task_type="t", steps=steps, parameters=parameters or {}, timing=Timing(100.0), ids=IDS)


def run_of(task, cursor, item=None, phase=N):
    return next(r for r in task.Runs if (r.Cursor, r.Item, r.Phase) == (cursor, item, phase))


def do(task, cursor, result, now, item=None, phase=N):
    """Claim the unit's current run at `now` and finish it with `result` a moment later."""
    run = run_of(task, cursor, item, phase)
    entry = next(e for e in task.Outbox if e.DispatchId == run.DispatchId)
    claimed = claim(task, StepMessage.model_validate(entry.Body), "w", Timing(now))
    assert not isinstance(claimed, Refusal), claimed
    done = finish_attempt(claimed, run.DispatchId, "w", result, Timing(now + 0.5), ids=IDS)
    assert not isinstance(done, Refusal), done
    return done


def test_check_again_dispatches_the_same_attempt_later_and_counts_no_attempt():
    task = do(new(line()), 0, AttemptResult(ResultCode.OK), 100.0)
    first = run_of(task, 1)
    task = do(task, 1, waiting(5, "replica 10% caught up"), 110.0)
    again = run_of(task, 1)
    assert again.DispatchId != first.DispatchId and again.State is RunState.PENDING
    assert again.Attempt == 1 and task.Steps[1].Attempts == 1  # not a failed attempt
    entry = next(e for e in task.Outbox if e.DispatchId == again.DispatchId)
    assert entry.DueAt == 115.5  # no worker holds it meanwhile: it waits in the outbox
    step = task.Steps[1]
    assert step.State is StepState.RUNNING and step.Progress == "replica 10% caught up"
    assert step.WaitingSince == 110.5 and step.Code is None and step.TimeEnd is None
    assert [e.Event for e in task.History][-2:] == ["check_again", "dispatched"]

    for now in (120.0, 130.0):  # WaitingSince stays at the first answer
        task = do(task, 1, waiting(5, f"at {now}"), now)
    assert task.Steps[1].WaitingSince == 110.5 and task.Steps[1].Progress == "at 130.0"
    assert task.Steps[1].Attempts == 1

    task = do(task, 1, AttemptResult(ResultCode.OK, output={"caught_up": True}), 140.0)
    step = task.Steps[1]
    assert step.State is StepState.SUCCEEDED and step.WaitingSince is None and step.Progress == "at 130.0"
    assert task.Parameters["caught_up"] is True and run_of(task, 2).Attempt == 1


def test_check_again_with_no_retry_left_still_waits_it_is_not_a_failure():
    task = do(new(line(retry=0)), 0, AttemptResult(ResultCode.OK), 100.0)
    for now in range(110, 150, 2):  # 20 checks
        task = do(task, 1, waiting(1), float(now))
    assert task.TaskStatus is TaskStatus.RUNNING and task.Steps[1].Attempts == 1


def test_past_max_wait_the_unit_fails_like_a_timeout_and_the_task_rolls_back():
    task = do(new(line(max_wait=30, retry=3)), 0, AttemptResult(ResultCode.OK), 100.0)
    task = do(task, 1, waiting(20, "10%"), 110.0)  # waits from 110.5, so until 140.5
    assert next(e for e in task.Outbox if e.DispatchId == run_of(task, 1).DispatchId).DueAt == 130.5
    task = do(task, 1, waiting(20, "40%"), 130.5)  # due at 151: kept at the limit instead
    assert next(e for e in task.Outbox if e.DispatchId == run_of(task, 1).DispatchId).DueAt == 140.5
    task = do(task, 1, waiting(20, "70%"), 140.5)  # answered at 141: past the limit
    step = task.Steps[1]
    assert step.State is StepState.ROLLING_BACK and step.Code is ResultCode.TIMED_OUT
    assert "max_wait 30s" in step.Message and "70%" in step.Message
    assert task.TaskStatus is TaskStatus.ROLLING_BACK
    assert runs_of(task) == [(1, None, R)]  # retries left are not used: the wait itself ran out
    assert step.WaitingSince is None  # the rollback waits anew


def runs_of(task):
    return sorted((r.Cursor, r.Item, r.Phase) for r in task.Runs)


def test_without_max_wait_there_is_no_bound():
    task = do(new(line()), 0, AttemptResult(ResultCode.OK), 100.0)
    task = do(task, 1, waiting(3600), 110.0)
    task = do(task, 1, waiting(3600), 1e6)
    assert task.TaskStatus is TaskStatus.RUNNING and task.Steps[1].State is StepState.RUNNING


def fan_out(max_wait: float | None):
    steps = [make_step("a"), make_step("each"), make_step("join")]
    steps[1].ForEach, steps[1].MaxWait = "hosts", max_wait
    return steps


@pytest.mark.usefixtures("inline_items")
def test_an_item_of_a_for_each_step_checks_again_on_its_own():
    task = do(new(fan_out(max_wait=20), {"hosts": ["h0", "h1"]}), 0, AttemptResult(ResultCode.OK), 100.0)
    task = do(task, 1, waiting(5, "h0 syncing"), 110.0, item=0)
    task = do(task, 1, AttemptResult(ResultCode.OK, output={"h": 1}), 110.0, item=1)
    items = task.Steps[1].Items
    assert items[0].Progress == "h0 syncing" and items[0].WaitingSince == 110.5 and items[0].State is StepState.RUNNING
    assert items[1].State is StepState.SUCCEEDED and items[1].WaitingSince is None
    assert task.Steps[1].State is StepState.RUNNING and run_of(task, 1, 0).Attempt == 1
    task = do(task, 1, waiting(5, "h0 still syncing"), 131.0, item=0)  # past 130.5
    item = task.Steps[1].Items[0]
    assert item.Code is ResultCode.TIMED_OUT and "h0 still syncing" in item.Message
    assert task.TaskStatus is TaskStatus.ROLLING_BACK and "(each) item 0 failed" in task.TaskMessage
    assert runs_of(task) == [(1, 0, R), (1, 1, R)]  # both items applied: both are undone


def test_a_unit_checking_again_when_another_fails_is_rolled_back_not_cancelled():
    """It has run (that is why it checks): its pending next check is removed, and it is undone."""
    steps = [make_step("a"), make_step("b"), make_step("c")]
    steps[1].After = steps[2].After = [0]
    task = do(new(steps), 0, AttemptResult(ResultCode.OK), 100.0)
    task = do(task, 1, waiting(60, "waiting"), 110.0)
    task = do(task, 2, AttemptResult(ResultCode.FAILED, "boom", retryable=False), 111.0)
    assert task.Steps[1].State is StepState.ROLLING_BACK  # failed (not cancelled), then undone
    assert runs_of(task) == [(1, None, R), (2, None, R)]


def test_a_cancel_while_the_check_runs_stops_the_waiting():
    task = do(new(line()), 0, AttemptResult(ResultCode.OK), 100.0)
    run = run_of(task, 1)
    entry = next(e for e in task.Outbox if e.DispatchId == run.DispatchId)
    claimed = claim(task, StepMessage.model_validate(entry.Body), "w", Timing(110.0))
    cancelled = cancel(claimed, "ann", "not needed", Timing(111.0))
    assert not isinstance(cancelled, Refusal)
    done = finish_attempt(cancelled, run.DispatchId, "w", waiting(5, "half"), Timing(112.0), ids=IDS)
    assert done.Steps[1].State is StepState.ROLLING_BACK and "stopped while waiting" in done.Steps[1].Message
    assert done.TaskMessage == cancel_message(cancelled.CancelRequested)


def test_a_rollback_may_check_again_too():
    task = do(new(line()), 0, AttemptResult(ResultCode.OK), 100.0)
    task = do(task, 1, AttemptResult(ResultCode.FAILED, "boom", retryable=False), 110.0)
    task = do(task, 1, waiting(2, "undoing"), 120.0, phase=R)
    assert task.Steps[1].State is StepState.ROLLING_BACK and run_of(task, 1, phase=R).Attempt == 1
    assert task.Steps[1].RollbackAttempts == 1
    task = do(task, 1, AttemptResult(ResultCode.OK), 125.0, phase=R)
    assert task.Steps[1].State is StepState.ROLLED_BACK


def test_the_answer_is_read_from_the_reserved_key_and_checked():
    assert parse_answer({"x": 1}) is None
    assert parse_answer(check_again(5, "73% caught up")) == (5.0, "73% caught up")
    assert parse_answer({"_baton": {"check_again": 2}}) == (2.0, "")
    for bad in ({"_baton": 5}, {"_baton": {"check_again": 0}}, {"_baton": {"check_again": True}},
                {"_baton": {"check_again": float("inf")}}, {"_baton": {"check_again": 1e9}},
                {"_baton": {"check_again": 1, "progress": 3}}, {"_baton": {"again": 1}},
                {"_baton": {"check_again": 1}, "other": 1}):
        assert isinstance(parse_answer(bad), str), bad
