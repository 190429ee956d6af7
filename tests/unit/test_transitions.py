"""Pure changes to the task document: claim, lease, outcome, retry, routing, outbox, fencing."""

import pytest

from common.engine.document import StepMessage
from common.queues import ALARM_QUEUE
from common.engine.states import Phase, ResultCode, RunState, StepState, TaskStatus
from common.engine.core.entries import (
    IN_FLIGHT_BAND,
    AttemptResult,
    Refusal,
    Timing,
    claim,
    create_task,
    expire,
    finish_attempt,
    mark_sent,
    renew_lease,
)
from tests.support.builders import counter_ids, make_step, only_run

OK = AttemptResult(ResultCode.OK, output={"x": 1})
FAIL = AttemptResult(ResultCode.FAILED, "boom")


def new_task(steps=None, **kwargs):
    steps = steps or [make_step("a"), make_step("b"), make_step("c")]
    return create_task(task_type="t", steps=steps, parameters={"p": 1}, timing=Timing(100.0), ids=counter_ids(), **kwargs)


def message_for(task):
    entry = next(e for e in task.Outbox if e.DispatchId == only_run(task).DispatchId)
    return StepMessage.model_validate(entry.Body)


def run(task, result, owner="w1", now=101.0, delay=0.0):
    """Claim the active dispatch and finish it with `result`; returns the new task."""
    message = message_for(task)
    claimed = claim(task, message, owner, Timing(now))
    assert not isinstance(claimed, Refusal), claimed
    done = finish_attempt(claimed, message.DispatchId, owner, result, Timing(now + 1, retry_delay=delay), ids=counter_ids("n"))
    assert not isinstance(done, Refusal), done
    return done


def test_create_puts_step_0_dispatch_in_the_outbox():
    task = new_task()
    assert task.TaskStatus is TaskStatus.NOT_STARTED
    assert only_run(task).Cursor == 0 and only_run(task).State is RunState.PENDING
    (entry,) = task.Outbox
    assert entry.Queue == "mod" and entry.DueAt == 100.0
    body = StepMessage.model_validate(entry.Body)
    assert (body.TaskId, body.Cursor, body.Type, body.Command, body.Attempt) == (task.TaskId, 0, Phase.NORMAL, "do_a", 1)


def test_delayed_start_sets_due_time():
    task = new_task(start_at=500.0)
    assert task.Outbox[0].DueAt == 500.0


def test_first_step_of_new_task_ranks_below_in_flight_work():
    task = new_task(priority=2)
    assert task.Outbox[0].Priority == 2
    task = run(task, OK)
    assert task.Outbox[-1].Priority == IN_FLIGHT_BAND + 2


def test_claim_then_success_moves_to_next_step_and_merges_output():
    task = run(new_task(), OK)
    assert task.TaskStatus is TaskStatus.RUNNING
    assert task.Parameters == {"p": 1, "x": 1}
    assert task.Steps[0].State is StepState.SUCCEEDED and task.Steps[0].Code is ResultCode.OK
    assert task.Steps[0].TimeStart == 101.0 and task.Steps[0].TimeEnd == 102.0
    assert only_run(task).Cursor == 1 and task.TaskCursor == 1


def test_whole_success():
    task = new_task()
    for _ in range(3):
        task = run(task, OK)
    assert task.TaskStatus is TaskStatus.SUCCESS and only_run(task) is None and task.TimeEnd == 102.0
    assert [s.State for s in task.Steps] == [StepState.SUCCEEDED] * 3


def test_duplicate_claim_is_refused():
    task = new_task()
    message = message_for(task)
    claimed = claim(task, message, "w1", Timing(101))
    assert isinstance(claim(claimed, message, "w2", Timing(101)), Refusal)


def test_stale_dispatch_is_refused():
    task = new_task()
    old_message = message_for(task)
    task = run(task, OK)
    assert isinstance(claim(task, old_message, "w1", Timing(103)), Refusal)


def test_outcome_from_a_non_owner_is_refused():
    task = new_task()
    message = message_for(task)
    claimed = claim(task, message, "w1", Timing(101))
    assert isinstance(finish_attempt(claimed, message.DispatchId, "w2", OK, Timing(102)), Refusal)


def test_outcome_committed_once_only():
    task = new_task()
    message = message_for(task)
    claimed = claim(task, message, "w1", Timing(101))
    done = finish_attempt(claimed, message.DispatchId, "w1", OK, Timing(102))
    assert isinstance(finish_attempt(done, message.DispatchId, "w1", OK, Timing(102)), Refusal)


def test_failure_with_retries_left_redispatches_with_backoff():
    task = new_task([make_step("a", retry=2)])
    first = only_run(task).DispatchId
    task = run(task, FAIL, delay=4.0)
    assert task.TaskStatus is TaskStatus.RUNNING
    assert only_run(task).Attempt == 2 and only_run(task).DispatchId != first
    assert task.Outbox[-1].DueAt == 102.0 + 4.0
    assert task.Steps[0].State is StepState.RUNNING and task.Steps[0].Message == "boom"


def test_non_retryable_failure_skips_retries():
    task = new_task([make_step("a", retry=5)])
    task = run(task, AttemptResult(ResultCode.FAILED, "bad input", retryable=False))
    assert only_run(task).Phase is Phase.ROLLBACK


def test_failure_rolls_back_this_step_then_earlier_ones():
    task = new_task()
    task = run(task, OK)
    task = run(task, FAIL)  # step 1 fails
    assert task.TaskStatus is TaskStatus.ROLLING_BACK
    assert (only_run(task).Cursor, only_run(task).Phase) == (1, Phase.ROLLBACK)
    assert task.TaskMessage.startswith("step 1 (b) failed: boom")
    task = run(task, OK)
    assert (only_run(task).Cursor, only_run(task).Phase) == (0, Phase.ROLLBACK)
    assert task.TaskCursor == 1  # stays put while rolling back
    task = run(task, OK)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK and only_run(task) is None
    assert [s.State for s in task.Steps] == [StepState.ROLLED_BACK, StepState.ROLLED_BACK, StepState.WAITING]
    assert "step 1 (b) failed" in task.TaskMessage


def test_rollback_failure_puts_an_alarm_in_the_outbox():
    task = new_task()
    task = run(task, FAIL)
    task = run(task, FAIL)
    assert task.TaskStatus is TaskStatus.ROLLBACK_FAILED
    alarm = next(e for e in task.Outbox if e.Queue == ALARM_QUEUE)
    assert alarm.Body["Kind"] == "rollback_failed" and alarm.Body["TaskId"] == task.TaskId
    assert task.Steps[0].State is StepState.ROLLBACK_FAILED


def test_step_without_rollback_is_skipped():
    task = new_task([make_step("a"), make_step("b", rollback=False), make_step("c")])
    task = run(run(task, OK), OK)
    task = run(task, FAIL)  # c fails: roll back c, skip b, roll back a
    task = run(task, OK)
    assert (only_run(task).Cursor, only_run(task).Phase) == (0, Phase.ROLLBACK)
    assert task.Steps[1].State is StepState.SKIPPED


def test_renew_lease_by_owner_only():
    task = new_task()
    message = message_for(task)
    claimed = claim(task, message, "w1", Timing(101, lease=30))
    renewed = renew_lease(claimed, message.DispatchId, "w1", Timing(120, lease=30))
    assert only_run(renewed).Deadline == 150
    assert isinstance(renew_lease(claimed, message.DispatchId, "w2", Timing(120)), Refusal)


def test_lapsed_lease_counts_as_failed_attempt_and_fences_the_old_owner():
    task = new_task([make_step("a", retry=1)])
    message = message_for(task)
    claimed = claim(task, message, "w1", Timing(101, lease=10))
    assert isinstance(expire(claimed, Timing(105)), Refusal)  # not yet
    expired = expire(claimed, Timing(112), ids=counter_ids("s"))
    assert only_run(expired).Attempt == 2 and expired.Steps[0].Code is ResultCode.WORKER_LOST
    # The frozen worker wakes up: its renewal and outcome are refused.
    assert isinstance(renew_lease(expired, message.DispatchId, "w1", Timing(113)), Refusal)
    assert isinstance(finish_attempt(expired, message.DispatchId, "w1", OK, Timing(113)), Refusal)


def test_unclaimed_dispatch_is_republished_under_the_same_id():
    task = new_task()
    dispatch = only_run(task).DispatchId
    task = mark_sent(task, dispatch)
    assert task.Outbox == []
    again = expire(task, Timing(100 + 61, redeliver_after=60))
    assert [e.DispatchId for e in again.Outbox] == [dispatch]
    assert only_run(again).Deadline == 161 + 60


def test_mark_sent_twice_is_refused():
    task = new_task()
    sent = mark_sent(task, task.Outbox[0].DispatchId)
    assert isinstance(mark_sent(sent, task.Outbox[0].DispatchId), Refusal)


def test_history_records_every_transition():
    task = run(new_task([make_step("a")]), OK)
    assert [e.Event for e in task.History] == ["created", "dispatched", "claimed", "step_succeeded", "task_success"]


def test_inputs_are_never_mutated():
    task = new_task()
    before = task.model_dump()
    run(task, OK)
    assert task.model_dump() == before


@pytest.mark.parametrize("retry_number,expected", [(1, 1.0), (2, 2.0), (3, 4.0), (5, 10.0)])
def test_backoff_grows_exponentially_and_is_capped(retry_number, expected):
    from common.backoff import retry_delay
    from common.engine.document import BackoffPolicy

    policy = BackoffPolicy(Initial=1, Max=10, Multiplier=2, Jitter=0.5)
    assert retry_delay(policy, retry_number, 0.5) == expected  # the middle of the jitter band
    low, high = retry_delay(policy, retry_number, 0.0), retry_delay(policy, retry_number, 0.999999)
    assert low == pytest.approx(expected * 0.5) and high == pytest.approx(expected * 1.5, rel=1e-5)


def test_release_hands_the_step_back_without_counting_an_attempt():
    from common.engine.core.entries import release

    task = new_task()
    message = message_for(task)
    claimed = claim(task, message, "w1", Timing(101))
    released = release(claimed, message.DispatchId, "w1", Timing(102), ids=counter_ids("r"))
    assert only_run(released).State is RunState.PENDING and only_run(released).Attempt == 1
    assert only_run(released).DispatchId != message.DispatchId and released.Outbox[-1].DueAt == 102
    assert isinstance(release(claimed, message.DispatchId, "w2", Timing(102)), Refusal)


def test_claim_removes_the_outbox_entry_it_proves_delivered():
    task = new_task()
    message = message_for(task)
    claimed = claim(task, message, "w1", Timing(101))
    assert all(e.DispatchId != message.DispatchId for e in claimed.Outbox)


def test_release_of_a_step_whose_task_was_cancelled_rolls_it_back_instead():
    from common.engine.operator.actions import cancel
    from common.engine.core.entries import release

    task = new_task()
    message = message_for(task)
    claimed = claim(task, message, "w1", Timing(101))
    cancelled = cancel(claimed, "ann", "not needed", Timing(102))
    released = release(cancelled, message.DispatchId, "w1", Timing(103), ids=counter_ids("r"))
    assert released.TaskStatus is TaskStatus.ROLLING_BACK
    assert (only_run(released).Cursor, only_run(released).Phase) == (0, Phase.ROLLBACK)
