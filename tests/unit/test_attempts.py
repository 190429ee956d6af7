"""oss.api.attempts: every attempt of a step phase read back from the history, for the runs that
the API tests cannot reach without processes: a module shutting down under a claim (released,
then claimed again) and a worker that died (its lease lapsed: the sweeper failed the attempt)."""

from common.engine.document import StepMessage
from common.engine.states import ResultCode
from common.engine.core.entries import AttemptResult, Refusal, Timing, claim, create_task, expire, finish_attempt, release
from oss.api.attempts import attempts
from tests.support.builders import counter_ids, make_step, only_run


def written(result):
    assert not isinstance(result, Refusal), result
    return result


def claimed(task, owner, now):
    entry = next(e for e in task.Outbox if e.DispatchId == only_run(task).DispatchId)
    return written(claim(task, StepMessage.model_validate(entry.Body), owner, Timing(now, lease=5)))


def test_released_and_lost_attempts_each_keep_their_story():
    ids = counter_ids()
    task = create_task(task_type="t", steps=[make_step("only", retry=1)], parameters={}, timing=Timing(100.0), ids=ids)
    task = claimed(task, "w1", 101.0)
    task = written(release(task, only_run(task).DispatchId, "w1", Timing(102.0), ids=ids))  # w1 shuts down
    task = claimed(task, "w2", 103.0)
    task = written(expire(task, Timing(109.0), ids=ids))  # w2 died: its lease lapsed at 108
    task = claimed(task, "w3", 110.0)
    assert [(a.Attempt, a.Worker, a.Outcome, a.TimeStart, a.TimeEnd) for a in attempts(task)] == [
        (1, "w1", "released", 101.0, 102.0),
        (1, "w2", "failed, retried", 103.0, 109.0),
        (2, "w3", "running", 110.0, None),
    ]
    assert attempts(task)[1].Message == "lease of w2 lapsed"
    done = written(finish_attempt(task, only_run(task).DispatchId, "w3", AttemptResult(ResultCode.OK), Timing(111.0), ids=ids))
    assert [(a.Outcome, a.TimeEnd) for a in attempts(done)][-1] == ("ok", 111.0)


def test_a_dispatch_nobody_claimed_is_no_attempt():
    task = create_task(task_type="t", steps=[make_step("only")], parameters={}, timing=Timing(100.0), ids=counter_ids())
    assert attempts(task) == []
    assert [a.Outcome for a in attempts(claimed(task, "w1", 101.0))] == ["running"]


def test_checks_of_a_command_that_is_not_done_yet_make_one_attempt():
    ids = counter_ids()
    waiting = AttemptResult(ResultCode.OK, "40% caught up", check_again=5)
    task = create_task(task_type="t", steps=[make_step("only")], parameters={}, timing=Timing(100.0), ids=ids)
    task = claimed(task, "w1", 101.0)
    task = written(finish_attempt(task, only_run(task).DispatchId, "w1", waiting, Timing(102.0), ids=ids))
    assert [(a.Attempt, a.Outcome, a.Message, a.TimeEnd) for a in attempts(task)] == [
        (1, "checking again", "in 5s: 40% caught up", None)]
    task = claimed(task, "w2", 107.0)
    assert [(a.Attempt, a.Worker, a.Outcome, a.TimeStart) for a in attempts(task)] == [(1, "w2", "running", 101.0)]
    done = written(finish_attempt(task, only_run(task).DispatchId, "w2", AttemptResult(ResultCode.OK), Timing(108.0), ids=ids))
    assert [(a.Attempt, a.Outcome, a.TimeStart, a.TimeEnd) for a in attempts(done)] == [(1, "ok", 101.0, 108.0)]


def test_an_attempt_a_cancel_stopped_ends_there():
    """A cancel with stop_running removes the running run: its attempt ended then (it read
    "unfinished, 887 ms so far" on a task rolled back long since)."""
    from common.engine.operator.actions import cancel

    ids = counter_ids()
    task = create_task(task_type="t", steps=[make_step("only", retry=1)], parameters={}, timing=Timing(100.0), ids=ids)
    task = claimed(task, "w1", 101.0)
    task = written(cancel(task, "olga", "hangs on a dead host", Timing(105.0), ids=ids, stop_running=True))
    assert [(a.Attempt, a.Worker, a.Outcome, a.TimeEnd, a.Message) for a in attempts(task)] == [
        (1, "w1", "stopped by an operator", 105.0, "hangs on a dead host"),
    ]
