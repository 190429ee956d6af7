"""Operator actions as pure changes: cancel, retry, retry-rollback, compensate, and every refusal."""

from __future__ import annotations

import pytest

from common.engine.document import StepMessage
from common.engine.operator.actions import cancel, compensate, retry, retry_rollback
from common.engine.states import FINAL_STATUSES, Phase, ResultCode, RunState, StepState, TaskStatus
from common.engine.core.entries import (
    AttemptResult,
    Refusal,
    Timing,
    claim,
    create_task,
    expire,
    finish_attempt,
)
from tests.support.builders import counter_ids, make_step, only_run

OK = AttemptResult(ResultCode.OK, output={"x": 1})
FAIL = AttemptResult(ResultCode.FAILED, "boom")
T = Timing(200.0)


def new_task(steps=None, **kwargs):
    steps = steps or [make_step("a"), make_step("b"), make_step("c")]
    return create_task(task_type="t", steps=steps, parameters={"p": 1}, timing=Timing(100.0), ids=counter_ids(), **kwargs)


def message_for(task):
    entry = next(e for e in task.Outbox if e.DispatchId == only_run(task).DispatchId)
    return StepMessage.model_validate(entry.Body)


def claimed(task, owner="w1", now=101.0):
    result = claim(task, message_for(task), owner, Timing(now, lease=10))
    assert not isinstance(result, Refusal), result
    return result


IDS = counter_ids("n")  # one sequence for the whole module: dispatch ids never repeat


def finished(task, result, owner="w1", now=102.0):
    done = finish_attempt(task, only_run(task).DispatchId, owner, result, Timing(now), ids=IDS)
    assert not isinstance(done, Refusal), done
    return done


def run(task, result):
    return finished(claimed(task), result)


def applied(action, task, actor="alice", reason="wrong region", timing=T):
    result = action(task, actor, reason, timing, ids=IDS)
    assert not isinstance(result, Refusal), result
    return result


def events(task):
    return [e.Event for e in task.History]


def finish_all(task, result=OK):
    """Run whatever is active with `result` until the task ends."""
    while task.TaskStatus not in FINAL_STATUSES:
        task = run(task, result)
    return task


def rolled_back_at_step_1():
    return finish_all(run(run(new_task(), OK), FAIL))


def rollback_failed_at_step_1():
    task = run(run(new_task(), OK), FAIL)  # step 1 failed; its rollback is next
    task = run(task, FAIL)  # ... and fails
    assert task.TaskStatus is TaskStatus.ROLLBACK_FAILED
    return task


# --- cancel -------------------------------------------------------------------------------------


def test_cancel_before_step_0_is_claimed_ends_the_task_at_once():
    task = new_task()
    old_message = message_for(task)
    done = applied(cancel, task)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK and only_run(done) is None and done.Outbox == []
    assert done.Steps[0].State is StepState.CANCELLED
    assert done.TaskMessage == "rolled back: cancelled by alice: wrong region"
    assert done.TimeEnd == 200.0
    assert events(done)[-3:] == ["cancel_requested", "cancelled", "task_rolled_back"]
    request = next(e for e in done.History if e.Event == "cancel_requested")
    assert (request.Actor, request.Message) == ("alice", "wrong region")
    assert isinstance(claim(done, old_message, "w1", Timing(201)), Refusal)  # the late delivery


def test_cancel_of_a_delayed_start_drops_the_waiting_dispatch():
    done = applied(cancel, new_task(start_at=10_000.0))
    assert done.TaskStatus is TaskStatus.ROLLED_BACK and done.Outbox == []


def test_cancel_while_a_step_runs_waits_for_its_outcome_then_rolls_it_back():
    task = claimed(run(new_task(), OK))  # step 1 running
    requested = applied(cancel, task)
    assert requested.TaskStatus is TaskStatus.RUNNING and only_run(requested) == only_run(task)
    assert requested.CancelRequested.Actor == "alice" and requested.Outbox == task.Outbox
    after = finished(requested, OK)  # step 1 succeeded, but the task was cancelled
    assert after.Steps[1].State is StepState.ROLLING_BACK and after.Parameters["x"] == 1
    assert (only_run(after).Cursor, only_run(after).Phase) == (1, Phase.ROLLBACK)
    assert after.TaskStatus is TaskStatus.ROLLING_BACK
    assert after.TaskMessage == "cancelled by alice: wrong region"
    done = finish_all(after)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK
    assert [s.State for s in done.Steps] == [StepState.ROLLED_BACK, StepState.ROLLED_BACK, StepState.WAITING]
    assert done.TaskMessage == "rolled back: cancelled by alice: wrong region"
    assert "cancelled" in events(done)


def test_cancel_skips_the_remaining_retries_of_a_failing_step():
    task = claimed(new_task([make_step("a", retry=3), make_step("b")]))
    after = finished(applied(cancel, task), FAIL)
    assert (only_run(after).Cursor, only_run(after).Phase, only_run(after).Attempt) == (0, Phase.ROLLBACK, 1)
    assert after.Steps[0].State is StepState.ROLLING_BACK


def test_cancel_with_a_lapsed_lease_rolls_back_instead_of_retrying():
    task = applied(cancel, claimed(new_task([make_step("a", retry=3)])))
    after = expire(task, Timing(500.0), ids=counter_ids("s"))
    assert (only_run(after).Cursor, only_run(after).Phase) == (0, Phase.ROLLBACK)


def test_cancel_of_a_pending_next_step_rolls_back_the_earlier_steps_now():
    task = run(new_task(), OK)  # step 1 dispatched, not claimed
    old_message = message_for(task)
    after = applied(cancel, task)
    assert after.Steps[1].State is StepState.CANCELLED
    assert (only_run(after).Cursor, only_run(after).Phase) == (0, Phase.ROLLBACK)
    assert after.TaskStatus is TaskStatus.ROLLING_BACK
    assert old_message.DispatchId not in {e.DispatchId for e in after.Outbox}
    assert after.Outbox[-1].DispatchId == only_run(after).DispatchId
    assert isinstance(claim(after, old_message, "w2", Timing(201)), Refusal)


def test_cancel_of_a_retry_waiting_out_its_backoff_rolls_that_step_back():
    task = run(new_task([make_step("a", retry=2), make_step("b")]), FAIL)  # attempt 2 pending
    assert only_run(task).Attempt == 2 and only_run(task).State is RunState.PENDING
    after = applied(cancel, task)
    assert after.Steps[0].State is StepState.ROLLING_BACK and after.Steps[0].TimeEnd == 200.0
    assert (only_run(after).Cursor, only_run(after).Phase) == (0, Phase.ROLLBACK)


def test_cancel_passes_over_steps_without_rollback():
    task = run(new_task([make_step("a", rollback=False), make_step("b")]), OK)
    after = applied(cancel, task)
    assert after.TaskStatus is TaskStatus.ROLLED_BACK
    assert [s.State for s in after.Steps] == [StepState.SKIPPED, StepState.CANCELLED]


@pytest.mark.parametrize("module_first", [True, False])
def test_cancel_racing_a_module_commit_ends_rolled_back_either_way(module_first):
    task = claimed(new_task())
    if module_first:
        after = applied(cancel, finished(task, OK))  # step 1 pending when the cancel lands
    else:
        after = finished(applied(cancel, task), OK)  # the commit sees the cancel
    done = finish_all(after)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK
    assert done.Steps[0].State is StepState.ROLLED_BACK and done.Steps[2].State is StepState.WAITING


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda: finish_all(new_task()), "task is SUCCESS: it has ended"),
        (rolled_back_at_step_1, "task is ROLLED_BACK: it has ended"),
        (rollback_failed_at_step_1, "task is ROLLBACK_FAILED: it has ended"),
        (lambda: run(run(new_task(), OK), FAIL), "task is ROLLING_BACK already"),
        (lambda: applied(cancel, claimed(new_task()), actor="bob"), "cancel already requested by bob"),
    ],
)
def test_cancel_refusals(make, why):
    refusal = cancel(make(), "alice", "r", T)
    assert isinstance(refusal, Refusal) and refusal.reason.startswith(why)


# --- retry --------------------------------------------------------------------------------------


def test_retry_restarts_the_flow_at_step_0_as_a_new_generation():
    failed = rolled_back_at_step_1()  # step 0 ran and was rolled back, so step 1 has nothing to stand on
    assert failed.Parameters == {"p": 1, "x": 1}
    again = applied(retry, failed)
    assert again.TaskStatus is TaskStatus.NOT_STARTED and again.TimeEnd is None and again.TaskMessage == ""
    assert again.TimeStart is None and again.TaskCursor == 0 and again.Generation == 1
    assert [s.State for s in again.Steps] == [StepState.RUNNING, StepState.WAITING, StepState.WAITING]
    assert all(s.Code is None and s.RollbackCode is None and s.Attempts == 0 for s in again.Steps)
    assert again.Parameters == {"p": 1}  # as submitted: the undone run's results are gone
    assert (only_run(again).Cursor, only_run(again).Phase, only_run(again).Attempt) == (0, Phase.NORMAL, 1)
    entry = again.Outbox[-1]
    assert entry.DispatchId == only_run(again).DispatchId and entry.DueAt == 200.0
    retried = next(e for e in again.History if e.Event == "retried")
    assert (retried.Actor, retried.Message) == ("alice", "wrong region")
    assert events(again)[: len(failed.History)] == events(failed)  # the first run's story stays
    claimed_again = claimed(again, now=201.0)
    assert claimed_again.TaskStatus is TaskStatus.RUNNING and claimed_again.TimeStart == 201.0
    assert finish_all(again).TaskStatus is TaskStatus.SUCCESS


def test_a_new_generation_gets_new_idempotency_keys():
    from common.engine.core.entries import idempotency_key, run_key

    assert idempotency_key("T", 1, Phase.NORMAL) == "T:1:normal" and run_key("T") == "T"
    assert idempotency_key("T", 1, Phase.NORMAL, 2) == "T:g2:1:normal" and run_key("T", 2) == "T:g2"


def test_a_retried_task_that_fails_again_rolls_back_every_step_again():
    again = applied(retry, rolled_back_at_step_1())
    done = finish_all(run(run(again, OK), FAIL))
    assert done.TaskStatus is TaskStatus.ROLLED_BACK
    assert [s.State for s in done.Steps[:2]] == [StepState.ROLLED_BACK, StepState.ROLLED_BACK]


def test_retry_of_a_task_cancelled_before_it_started_starts_it():
    again = applied(retry, applied(cancel, new_task()))
    assert again.TaskStatus is TaskStatus.NOT_STARTED and again.CancelRequested is None
    assert (only_run(again).Cursor, again.Steps[0].State) == (0, StepState.RUNNING)
    assert finish_all(again).TaskStatus is TaskStatus.SUCCESS


def test_retry_of_a_task_cancelled_mid_step_runs_the_flow_again():
    task = applied(cancel, claimed(run(new_task(), OK)))
    again = applied(retry, finish_all(finished(task, OK)))
    assert only_run(again).Cursor == 0 and again.CancelRequested is None
    assert finish_all(again).TaskStatus is TaskStatus.SUCCESS


@pytest.mark.parametrize(
    "make, why",
    [
        (new_task, "task is NOT_STARTED: only a ROLLED_BACK task can be retried"),
        (lambda: claimed(new_task()), "task is RUNNING"),
        (lambda: run(run(new_task(), OK), FAIL), "task is ROLLING_BACK"),
        (lambda: finish_all(new_task()), "task is SUCCESS"),
        (rollback_failed_at_step_1, "a rollback step failed: retry that rollback or mark it compensated"),
    ],
)
def test_retry_refusals(make, why):
    refusal = retry(make(), "alice", "r", T)
    assert isinstance(refusal, Refusal) and refusal.reason.startswith(why)


# --- a failed rollback --------------------------------------------------------------------------


def test_retry_rollback_dispatches_the_failed_rollback_again():
    failed = rollback_failed_at_step_1()
    again = applied(retry_rollback, failed)
    assert again.TaskStatus is TaskStatus.ROLLING_BACK and again.TimeEnd is None
    assert again.Steps[1].State is StepState.ROLLING_BACK and again.Steps[1].RollbackAttempts == 0
    assert (only_run(again).Cursor, only_run(again).Phase, only_run(again).Attempt) == (1, Phase.ROLLBACK, 1)
    assert again.TaskMessage == "step 1 (b) failed: boom"
    assert "rollback_retried" in events(again)
    done = finish_all(again)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK
    assert done.TaskMessage == "rolled back: step 1 (b) failed: boom"


def test_compensate_marks_the_step_and_lets_the_rollback_continue():
    again = applied(compensate, rollback_failed_at_step_1(), reason="dropped the database by hand")
    assert again.Steps[1].State is StepState.COMPENSATED
    assert again.Steps[1].RollbackMessage == "compensated by hand by alice: dropped the database by hand"
    assert (only_run(again).Cursor, only_run(again).Phase) == (0, Phase.ROLLBACK)
    event = next(e for e in again.History if e.Event == "compensated")
    assert (event.Actor, event.Cursor, event.Phase) == ("alice", 1, Phase.ROLLBACK)
    done = finish_all(again)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK
    assert [s.State for s in done.Steps] == [StepState.ROLLED_BACK, StepState.COMPENSATED, StepState.WAITING]


def test_compensating_step_0_ends_the_task_rolled_back():
    task = run(new_task(), FAIL)  # step 0 failed, its rollback is next
    failed = run(task, FAIL)
    done = applied(compensate, failed)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK and only_run(done) is None
    assert done.TaskMessage == "rolled back: step 0 (a) failed: boom"


def test_a_compensated_task_can_be_retried():
    done = finish_all(applied(compensate, rollback_failed_at_step_1()))
    again = applied(retry, done)
    assert [s.State for s in again.Steps] == [StepState.RUNNING, StepState.WAITING, StepState.WAITING]


@pytest.mark.parametrize("action", [retry_rollback, compensate])
@pytest.mark.parametrize("make", [new_task, rolled_back_at_step_1, lambda: finish_all(new_task())])
def test_failed_rollback_actions_refuse_other_states(action, make):
    refusal = action(make(), "alice", "r", T)
    assert isinstance(refusal, Refusal) and "only a ROLLBACK_FAILED task" in refusal.reason


# --- all of them --------------------------------------------------------------------------------


@pytest.mark.parametrize("action", [cancel, retry, retry_rollback, compensate])
def test_a_reason_is_required(action):
    with pytest.raises(ValueError):
        action(new_task(), "alice", "  ", T)


def test_actions_never_change_their_input():
    for action, task in [(cancel, new_task()), (retry, rolled_back_at_step_1()),
                         (retry_rollback, rollback_failed_at_step_1()), (compensate, rollback_failed_at_step_1())]:  # fmt: skip
        before = task.model_dump()
        applied(action, task)
        assert task.model_dump() == before
