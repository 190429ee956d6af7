"""A task's deadline and its wait for another task as pure changes (common/engine/gates/after_task/waits.py,
common/engine/gates/after_task/changes.py): when the deadline counts, what the sweeper's index says, the
rollback and its message, and the wake-up on the awaited task's end."""

from __future__ import annotations

from common.engine.operator.actions import retry
from common.engine.operator.flow import pause
from common.engine.states import Phase, StepState, TaskStatus
from common.engine.gates.after_task.waits import TASK_FINISHED, WAIT_TASK
from common.engine.core.entries import Refusal, Timing, claim, create_task, expire, finish_attempt
from common.engine.gates.after_task.changes import awaited_finished, listen_for, recheck_later
from tests.support.builders import counter_ids, make_step
from tests.unit.test_graph_transitions import FAIL, OK, diamond, do, message, runs

N, R = Phase.NORMAL, Phase.ROLLBACK
IDS = counter_ids("w")


def new(steps=None, **kwargs):
    return create_task(task_type="t", steps=steps or diamond(), parameters={}, timing=Timing(100.0),
                       ids=counter_ids("d"), **kwargs)  # fmt: skip


def test_the_deadline_runs_from_the_start_and_the_sweeper_index_holds_it():
    task = new(deadline_seconds=50, start_at=120.0)
    assert (task.Deadline, task.DeadlineSeconds) == (170.0, 50)
    task.to_doc()
    assert task.SweepAt == min(170.0, task.Runs[0].Deadline)
    waiting = new(deadline_seconds=50, after_task="other")
    waiting.to_doc()
    assert waiting.Runs == [] and waiting.SweepAt == 150.0  # no run, yet the sweeper comes


def test_a_step_ending_exactly_at_the_deadline_counts_and_the_next_one_starts():
    task = new(deadline_seconds=100)  # deadline 200
    msg = message(task, 0)
    done = finish_attempt(claim(task, msg, "w", Timing(150.0)), msg.DispatchId, "w", OK, Timing(200.0), ids=IDS)
    assert done.TaskStatus is TaskStatus.RUNNING and runs(done) == [(1, None, N), (2, None, N)]


def test_past_the_deadline_the_running_step_finishes_then_the_task_rolls_back_with_a_message():
    task = do(new(deadline_seconds=100), 0, now=150.0)  # a done at 151; b, c dispatched
    b = message(task, 1)
    task = claim(task, b, "w", Timing(190.0))
    swept = expire(task, Timing(200.5), ids=IDS)  # the deadline passed: the sweeper acts
    assert swept.TaskStatus is TaskStatus.ROLLING_BACK
    assert swept.TaskMessage == "deadline passed: the task had 100 s to finish"
    assert swept.Steps[2].State is StepState.CANCELLED and runs(swept) == [(1, None, N)]  # b drains
    assert ("deadline_passed", "sweeper") in [(e.Event, e.Actor) for e in swept.History]
    ended = finish_attempt(swept, b.DispatchId, "w", OK, Timing(210.0), ids=IDS)
    assert ended.Steps[1].State is StepState.ROLLING_BACK  # b finished, and is undone first
    while ended.Runs:
        ended = do(ended, ended.Runs[0].Cursor, phase=R, now=220.0)
    assert ended.TaskStatus is TaskStatus.ROLLED_BACK
    assert ended.TaskMessage == "rolled back: deadline passed: the task had 100 s to finish"
    ended.to_doc()
    assert ended.SweepAt is None  # ended: the deadline no longer calls the sweeper


def test_an_outcome_after_the_deadline_gets_no_retry_and_expire_before_it_does_nothing():
    steps = [make_step("a", retry=3), make_step("b")]
    task = new(steps, deadline_seconds=100)
    assert isinstance(expire(task, Timing(150.0)), Refusal)
    msg = message(task, 0)
    failed = finish_attempt(claim(task, msg, "w", Timing(150.0)), msg.DispatchId, "w", FAIL, Timing(201.0), ids=IDS)
    assert failed.TaskStatus is TaskStatus.ROLLING_BACK and runs(failed) == [(0, None, R)]


def test_a_paused_task_still_rolls_back_at_its_deadline():
    task = pause(new(deadline_seconds=100), "olga", "hold", Timing(101.0))
    assert task.Runs == []
    swept = expire(task, Timing(201.0), ids=IDS)
    assert swept.TaskStatus is TaskStatus.ROLLED_BACK and swept.Paused is None
    assert "deadline passed" in swept.TaskMessage


def test_a_retry_gets_its_time_again():
    task = expire(new(deadline_seconds=100), Timing(201.0), ids=IDS)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    again = retry(task, "olga", "try again", Timing(500.0), ids=IDS)
    assert again.Deadline == 600.0 and runs(again) == [(0, None, N)]


def test_a_task_waits_for_another_and_starts_when_it_succeeds():
    waiter = new(after_task="first")
    assert waiter.Runs == [] and waiter.Outbox == [] and waiter.TaskStatus is TaskStatus.NOT_STARTED
    assert (waiter.WaitingFor.Kind, waiter.WaitingFor.TaskId, waiter.WaitingFor.Since) == (WAIT_TASK, "first", 100.0)
    first = create_task(task_type="t", steps=[make_step("only")], parameters={}, timing=Timing(100.0),
                        ids=counter_ids("f"), task_id="first")  # fmt: skip
    first = listen_for(first, waiter.TaskId)
    assert first.AwaitedBy == [waiter.TaskId]
    assert isinstance(listen_for(first, waiter.TaskId), Refusal)
    first = do(first, 0)
    assert first.TaskStatus is TaskStatus.SUCCESS
    (wake,) = [e for e in first.Outbox if e.Kind == TASK_FINISHED]
    assert wake.Body == {"TaskId": waiter.TaskId, "AwaitedTaskId": "first", "Status": 0}
    assert isinstance(listen_for(first, "late"), Refusal)  # ended: the caller wakes it itself
    woken = awaited_finished(waiter, "first", TaskStatus.SUCCESS, Timing(300.0), ids=IDS)
    assert woken.WaitingFor is None and runs(woken) == [(0, None, N)]
    assert isinstance(awaited_finished(woken, "first", TaskStatus.SUCCESS, Timing(301.0)), Refusal)  # once


def test_a_waiter_never_starts_when_the_awaited_task_fails():
    waiter = new(after_task="first")
    for status in (TaskStatus.ROLLED_BACK, TaskStatus.ROLLBACK_FAILED):
        ended = awaited_finished(waiter, "first", status, Timing(300.0), ids=IDS)
        assert ended.TaskStatus is TaskStatus.ROLLED_BACK and ended.Runs == []
        assert ended.TaskMessage == f"rolled back: task first, which this task waited for, ended {status.name}: not started"
    assert isinstance(awaited_finished(waiter, "another", TaskStatus.SUCCESS, Timing(300.0)), Refusal)


def test_the_sweeper_rechecks_a_wait_later():
    waiter = new(after_task="first")
    waiter.to_doc()
    assert waiter.SweepAt == waiter.WaitingFor.RecheckAt
    later = recheck_later(waiter, "first", Timing(500.0))
    assert later.WaitingFor.RecheckAt > 500.0 and later.WaitingFor.Since == 100.0


def test_a_start_at_given_with_after_task_still_holds_when_the_wait_ends_sooner():
    waiter = new(after_task="first", start_at=4000.0)
    assert waiter.StartAt == 4000.0 and waiter.Outbox == []
    woken = awaited_finished(waiter, "first", TaskStatus.SUCCESS, Timing(300.0), ids=IDS)
    assert [e.DueAt for e in woken.Outbox] == [4000.0]  # not at 300: the submission said 4000
    late = awaited_finished(waiter, "first", TaskStatus.SUCCESS, Timing(5000.0), ids=IDS)
    assert [e.DueAt for e in late.Outbox] == [5000.0]  # the wait ended after it: at once


def test_a_task_with_a_lock_and_after_task_asks_for_its_lock_only_when_that_task_succeeded():
    from common.engine.gates.lock.table import LOCK_ACQUIRE, LOCK_RELEASE, PENDING, RELEASED, WAITING
    from common.engine.gates.lock.task_lock import LOCK_WAIT

    waiter = new(after_task="first", lock=("cluster:eu", 5))
    assert waiter.Lock.State == PENDING and waiter.WaitingFor.Kind == WAIT_TASK
    assert waiter.Outbox == []  # no place in the lock's line while it could not start anyway
    woken = awaited_finished(waiter, "first", TaskStatus.SUCCESS, Timing(300.0), ids=IDS)
    assert woken.Lock.State == WAITING and woken.WaitingFor.Kind == LOCK_WAIT and woken.Runs == []
    (ask,) = woken.Outbox
    assert ask.Kind == LOCK_ACQUIRE and ask.Body["Key"] == "cluster:eu" and ask.Body["Limit"] == 5
    failed = awaited_finished(waiter, "first", TaskStatus.ROLLED_BACK, Timing(300.0), ids=IDS)
    assert failed.TaskStatus is TaskStatus.ROLLED_BACK and failed.Lock.State == RELEASED
    assert [e for e in failed.Outbox if e.Kind in (LOCK_ACQUIRE, LOCK_RELEASE)] == []  # never asked: nothing to give back


def test_a_pause_and_resume_before_a_delayed_start_keep_the_start():
    from common.engine.operator.flow import resume

    scheduled = new(start_at=4000.0)
    assert scheduled.Outbox and {e.DueAt for e in scheduled.Outbox} == {4000.0}
    held = pause(scheduled, "olga", "not yet", Timing(200.0))
    assert held.Runs == [] and held.Outbox == []  # the scheduled dispatches were withdrawn
    resumed = resume(held, "olga", "go", Timing(300.0), ids=IDS)
    assert resumed.Outbox and {e.DueAt for e in resumed.Outbox} == {4000.0}  # not 300: the start holds
    late = resume(held, "olga", "go", Timing(5000.0), ids=IDS)
    assert {e.DueAt for e in late.Outbox} == {5000.0}  # resumed after the start: at once

