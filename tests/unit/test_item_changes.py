"""The changes of one item record (common.engine.kinds.for_each.item_changes), each on its own: what a
claim, an outcome, a cancel, the sweeper and a chain do to a record, and what it then owes."""

from __future__ import annotations

from common.engine.kinds.for_each.item_record import OWES_FAILED, OWES_ROLLBACK_SUCCESSOR, OWES_SETTLED, OWES_SUCCESSOR, ItemRecord
from common.engine.kinds.for_each.item_changes import (
    cancel_item,
    claim_item,
    expire_item,
    finish_item_attempt,
    new_records,
    start_item_rollback,
    start_successor,
)
from common.engine.states import Phase, ResultCode, RunState, StepState, TaskStatus
from common.engine.core.entries import AttemptResult, Refusal, Timing, create_task
from tests.support.builders import counter_ids, make_step

NOW = 1000.0


def _task(max_parallel=2, retry=0, items=5):
    step = make_step("each", retry=retry)
    step.ForEach, step.MaxParallel, step.After = "hosts", max_parallel, []
    task = create_task(task_type="t", steps=[step], parameters={"hosts": list(range(items))}, timing=Timing(NOW),
                       task_id="t1", ids=counter_ids("t1"))
    task.Steps[0].ItemCount = items
    return task


def _records(task):
    return new_records(task, 0, list(range(task.Steps[0].ItemCount)), Timing(NOW), counter_ids("r"), "oss")


def _claimed(record, task, owner="w"):
    claimed = claim_item(record, task, record.Run.DispatchId, owner, Timing(NOW + 1, lease=30))
    assert isinstance(claimed, ItemRecord)
    return claimed


def test_the_head_of_each_chain_is_dispatched_and_the_rest_wait():
    records = _records(_task(max_parallel=2))
    assert [r.State for r in records] == [StepState.RUNNING] * 2 + [StepState.WAITING] * 3
    assert [bool(r.Outbox) for r in records] == [True, True, False, False, False]
    assert records[0].Outbox[0].Body["Item"] == 0 and records[1].Outbox[0].Body["Item"] == 1


def test_a_claim_leases_the_run_and_removes_its_publish_entry():
    task = _task()
    claimed = _claimed(_records(task)[0], task)
    assert claimed.Run.State is RunState.RUNNING and claimed.Run.Deadline == NOW + 31
    assert claimed.Outbox == [] and claimed.Attempts == 1
    again = claim_item(claimed, task, claimed.Run.DispatchId, "other", Timing(NOW + 2))
    assert isinstance(again, Refusal)


def test_no_normal_run_is_claimed_once_the_task_goes_backward():
    task = _task()
    record = _records(task)[0]
    task.TaskStatus = TaskStatus.ROLLING_BACK
    assert isinstance(claim_item(record, task, record.Run.DispatchId, "w", Timing(NOW)), Refusal)


def test_success_owes_the_successor_and_the_settling_and_keeps_the_output():
    task = _task()
    claimed = _claimed(_records(task)[0], task)
    done = finish_item_attempt(claimed, task, claimed.Run.DispatchId, "w",
                               AttemptResult(ResultCode.OK, output={"x": 1}), Timing(NOW + 2), counter_ids("d"))
    assert done.State is StepState.SUCCEEDED and done.Run is None and done.Output == {"x": 1}
    assert done.Owes == [OWES_SUCCESSOR, OWES_SETTLED]


def test_a_failure_with_retries_left_dispatches_the_next_attempt_after_its_backoff():
    task = _task(retry=1)
    claimed = _claimed(_records(task)[0], task)
    again = finish_item_attempt(claimed, task, claimed.Run.DispatchId, "w", AttemptResult(ResultCode.FAILED, "no"),
                                Timing(NOW + 2, retry_delay=4.0), counter_ids("d"))
    assert again.State is StepState.RUNNING and again.Run.Attempt == 2 and again.Owes == []
    assert again.Outbox[0].DueAt == NOW + 6
    last = finish_item_attempt(_claimed(again, task), task, again.Run.DispatchId, "w",
                               AttemptResult(ResultCode.FAILED, "no"), Timing(NOW + 7), counter_ids("e"))
    assert last.State is StepState.FAILED and last.Owes == [OWES_FAILED, OWES_SETTLED]


def test_a_cancel_withdraws_a_first_attempt_as_never_run_and_a_waiting_retry_as_failed():
    task = _task(retry=1)
    first = _records(task)[0]
    task.TaskStatus = TaskStatus.ROLLING_BACK
    cancelled = cancel_item(first, task, Timing(NOW))
    assert cancelled.State is StepState.CANCELLED and cancelled.Run is None and cancelled.Outbox == []
    task.TaskStatus = TaskStatus.RUNNING
    retry = finish_item_attempt(_claimed(first, task), task, first.Run.DispatchId, "w",
                                AttemptResult(ResultCode.FAILED, "no"), Timing(NOW + 2, retry_delay=9), counter_ids("d"))
    task.TaskStatus = TaskStatus.ROLLING_BACK
    assert cancel_item(retry, task, Timing(NOW + 3)).State is StepState.FAILED  # it ran before: rolled back


def test_the_sweeper_counts_a_lapsed_lease_as_a_lost_attempt_and_publishes_an_unclaimed_run_again():
    task = _task(retry=1)
    records = _records(task)
    claimed = _claimed(records[0], task)
    lost = expire_item(claimed, task, Timing(NOW + 100), counter_ids("x"), redispatch_backoff_max=8)
    assert lost.Run.Attempt == 2 and [e.Event for e in lost.History[-2:]] == ["attempt_failed", "dispatched"]
    assert "lapsed" in lost.Message and lost.Code is ResultCode.WORKER_LOST
    unclaimed = expire_item(records[1], task, Timing(NOW + 100, redeliver_after=60), counter_ids("y"), 8)
    assert unclaimed.Run.Redispatches == 1 and unclaimed.Run.Deadline == NOW + 160
    assert unclaimed.Outbox[0].DueAt == NOW + 100
    assert isinstance(expire_item(records[2], task, Timing(NOW + 100), counter_ids("z"), 8), Refusal)


def test_a_successor_starts_once_and_never_while_the_task_is_paused_or_backward():
    task = _task()
    waiting = _records(task)[2]
    started = start_successor(waiting, task, Timing(NOW), counter_ids("s"), "relay")
    assert started.State is StepState.RUNNING and started.Run.Phase is Phase.NORMAL
    assert isinstance(start_successor(started, task, Timing(NOW), counter_ids("s"), "relay"), Refusal)
    task.TaskStatus = TaskStatus.ROLLING_BACK
    assert isinstance(start_successor(waiting, task, Timing(NOW), counter_ids("s"), "relay"), Refusal)


def test_an_applied_item_rolls_back_once_and_a_rolled_back_one_owes_the_next_of_its_chain():
    task = _task()
    claimed = _claimed(_records(task)[0], task)
    done = finish_item_attempt(claimed, task, claimed.Run.DispatchId, "w", AttemptResult(ResultCode.OK),
                               Timing(NOW + 2), counter_ids("d"))
    done.Owes = []
    task.TaskStatus = TaskStatus.ROLLING_BACK
    rolling = start_item_rollback(done, task, Timing(NOW + 3), counter_ids("r"), "relay")
    assert rolling.State is StepState.ROLLING_BACK and rolling.Run.Phase is Phase.ROLLBACK
    assert isinstance(start_item_rollback(rolling, task, Timing(NOW + 3), counter_ids("r"), "relay"), Refusal)
    undone = finish_item_attempt(_claimed(rolling, task), task, rolling.Run.DispatchId, "w",
                                 AttemptResult(ResultCode.OK), Timing(NOW + 4), counter_ids("u"))
    assert undone.State is StepState.ROLLED_BACK and undone.Owes == [OWES_ROLLBACK_SUCCESSOR, OWES_SETTLED]
