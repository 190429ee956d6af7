"""A command waiting for a callback, as pure changes (docs/design/callbacks.md): the token's hash
on the run, the park, success merged and failure rolled back, heartbeats moving the deadline,
the timeout and a missed heartbeat, a kept early answer, spent tokens refused 409/410, a retry's
new run refusing the old attempt's token."""

from __future__ import annotations

import pytest

from common.engine.changes import CallbackRefused, CallbackTaken, answer_callback, expire
from common.engine.commands import await_callback, new_token, open_callback, parse_await, task_of, token_hash
from common.engine.core.entries import AttemptResult, Refusal, Timing, claim, create_task, finish_attempt
from common.engine.document import StepMessage, Task
from common.engine.operator.actions import cancel
from common.engine.states import Phase, ResultCode, RunState, StepState, TaskStatus
from common.engine.views import shown_wait
from tests.support.builders import counter_ids, make_step

IDS = counter_ids("cb")


def new(retry: int = 0) -> Task:
    steps = [make_step("a"), make_step("ticket", retry=retry), make_step("c")]
    return create_task(task_type="t", steps=steps, parameters={}, timing=Timing(100.0), ids=IDS, task_id="t" * 32)


def run_of(task: Task, cursor: int, phase: Phase = Phase.NORMAL):
    return next(r for r in task.Runs if (r.Cursor, r.Phase) == (cursor, phase))


def claimed(task: Task, cursor: int, now: float, phase: Phase = Phase.NORMAL) -> Task:
    run = run_of(task, cursor, phase)
    entry = next(e for e in task.Outbox if e.DispatchId == run.DispatchId)
    got = claim(task, StepMessage.model_validate(entry.Body), "w", Timing(now))
    assert not isinstance(got, Refusal), got
    return got


def finished(task: Task, cursor: int, result: AttemptResult, now: float, phase: Phase = Phase.NORMAL) -> Task:
    done = finish_attempt(task, run_of(task, cursor, phase).DispatchId, "w", result, Timing(now), ids=IDS)
    assert not isinstance(done, Refusal), done
    return done


def waiting_with_token(timeout: float = 3600, heartbeat: float | None = None, retry: int = 0) -> tuple[Task, str]:
    """Step 0 done; step 1's command asked for a token and answered await_callback at 120."""
    task = finished(claimed(new(retry), 0, 101.0), 0, AttemptResult(ResultCode.OK), 102.0)
    task = claimed(task, 1, 110.0)
    token = new_token(task.TaskId)
    opened = open_callback(task, run_of(task, 1).DispatchId, "w", token_hash(token))
    assert not isinstance(opened, Refusal), opened
    return finished(opened, 1, answered(timeout, heartbeat), 120.0), token


def answered(timeout: float, heartbeat: float | None = None) -> AttemptResult:
    parsed = parse_await(await_callback(timeout, heartbeat))
    assert isinstance(parsed, tuple)
    return AttemptResult(ResultCode.OK, callback=parsed)


def call(task: Task, token: str, action: str, now: float, output: dict | None = None, message: str = "",
         retryable: bool = True) -> CallbackTaken | CallbackRefused:
    return answer_callback(task, token_hash(token), action, output or {}, message, retryable, Timing(now), IDS)


def test_the_run_parks_holding_no_slot_and_says_what_it_waits_for():
    task, token = waiting_with_token(timeout=4 * 3600, heartbeat=600)
    run = run_of(task, 1)
    assert run.State is RunState.PARKED and run.Owner is None
    assert run.Callback.Hash == token_hash(token) and token not in task.to_json()
    assert run.Callback.Until == 120.0 + 4 * 3600 and run.Deadline == 720.0 and task.SweepAt == 720.0
    assert task.Steps[1].State is StepState.RUNNING and task.Steps[1].WaitingSince == 120.0
    wait = shown_wait(task)
    assert wait.Kind.value == "step" and wait.Key == "ticket: a callback (heartbeat every 10m) within 4h"
    assert task.History[-1].Event == "callback_waiting" and task_of(token) == task.TaskId


def test_success_merges_its_output_and_the_flow_goes_on_and_a_repeat_is_refused_409():
    task, token = waiting_with_token()
    taken = call(task, token, "succeed", 130.0, {"ticket": "CHG-7"}, "approved by the board")
    assert isinstance(taken, CallbackTaken) and taken.state == "succeeded"
    task = taken.task
    assert task.Parameters["ticket"] == "CHG-7" and task.Steps[1].State is StepState.SUCCEEDED
    assert run_of(task, 2).State is RunState.PENDING
    assert [(e.Event, e.Actor) for e in task.History if e.Cursor == 1][-1] == ("step_succeeded", "callback")
    for action in ("succeed", "fail", "heartbeat"):
        again = call(task, token, action, 131.0)
        assert isinstance(again, CallbackRefused) and again.status == 409 and "answered already" in again.reason


def test_failure_fails_the_step_and_rolls_the_task_back():
    task, token = waiting_with_token()
    taken = call(task, token, "fail", 130.0, message="the board said no", retryable=False)
    assert isinstance(taken, CallbackTaken) and taken.state == "failed"
    task = taken.task
    assert task.TaskStatus is TaskStatus.ROLLING_BACK and "called back: the board said no" in task.TaskMessage
    assert task.Steps[1].State is StepState.ROLLING_BACK and run_of(task, 1, Phase.ROLLBACK).State is RunState.PENDING


def test_heartbeats_move_the_deadline_and_a_missed_one_times_the_step_out():
    task, token = waiting_with_token(timeout=3600, heartbeat=60)
    assert run_of(task, 1).Deadline == 180.0
    for now in (150.0, 200.0, 250.0):
        taken = call(task, token, "heartbeat", now)
        assert isinstance(taken, CallbackTaken) and taken.state == "waiting"
        task = taken.task
        assert run_of(task, 1).Deadline == now + 60 and run_of(task, 1).State is RunState.PARKED
    assert isinstance(expire(task, Timing(300.0), IDS), Refusal)  # nothing past its deadline yet
    lapsed = expire(task, Timing(320.0), IDS)
    assert lapsed.Steps[1].State is StepState.ROLLING_BACK and lapsed.TaskStatus is TaskStatus.ROLLING_BACK
    assert "no callback heartbeat for 1m" in lapsed.TaskMessage
    late = call(lapsed, token, "succeed", 321.0)
    assert isinstance(late, CallbackRefused) and late.status == 410 and "timed out" in late.reason


def test_the_timeout_counts_as_the_steps_timeout_and_a_retry_refuses_the_old_token():
    task, token = waiting_with_token(timeout=30, retry=1)
    lapsed = expire(task, Timing(150.0), IDS)
    assert [e.Message for e in lapsed.History if e.Event == "attempt_failed"] == ["no callback within 30s"]
    retry = run_of(lapsed, 1)
    assert retry.Attempt == 2 and retry.State is RunState.PENDING and retry.Callback is None
    old = call(lapsed, token, "succeed", 151.0)
    assert isinstance(old, CallbackRefused) and old.status == 410
    assert lapsed.Steps[1].Callbacks[0].Attempt == 1 and lapsed.Steps[1].Callbacks[0].Ended == "timed_out"


def test_an_answer_that_comes_while_the_command_runs_is_kept_and_acts_once_it_parks():
    task = finished(claimed(new(), 0, 101.0), 0, AttemptResult(ResultCode.OK), 102.0)
    task = claimed(task, 1, 110.0)
    token = new_token(task.TaskId)
    task = open_callback(task, run_of(task, 1).DispatchId, "w", token_hash(token))
    beat = call(task, token, "heartbeat", 111.0)
    assert isinstance(beat, CallbackTaken) and beat.task is None  # nothing to keep
    kept = call(task, token, "succeed", 112.0, {"ticket": "CHG-8"})
    assert isinstance(kept, CallbackTaken) and kept.state == "kept"
    again = call(kept.task, token, "succeed", 113.0)
    assert isinstance(again, CallbackRefused) and again.status == 409
    done = finished(kept.task, 1, answered(3600), 120.0)
    assert done.Steps[1].State is StepState.SUCCEEDED and done.Parameters["ticket"] == "CHG-8"
    assert not any(r.State is RunState.PARKED for r in done.Runs)


def test_a_kept_answer_is_the_outcome_when_the_worker_dies_before_it_answers():
    task = finished(claimed(new(), 0, 101.0), 0, AttemptResult(ResultCode.OK), 102.0)
    task = claimed(task, 1, 110.0)
    token = new_token(task.TaskId)
    task = open_callback(task, run_of(task, 1).DispatchId, "w", token_hash(token))
    task = call(task, token, "succeed", 112.0, {"ticket": "CHG-9"}).task
    lapsed = expire(task, Timing(200.0), IDS)  # the lease (30s) lapsed: its worker is gone
    assert lapsed.Steps[1].State is StepState.SUCCEEDED and lapsed.Parameters["ticket"] == "CHG-9"


def test_a_command_that_returns_output_instead_spends_its_token():
    task = finished(claimed(new(), 0, 101.0), 0, AttemptResult(ResultCode.OK), 102.0)
    task = claimed(task, 1, 110.0)
    token = new_token(task.TaskId)
    task = open_callback(task, run_of(task, 1).DispatchId, "w", token_hash(token))
    task = finished(task, 1, AttemptResult(ResultCode.OK, output={"x": 1}), 115.0)
    late = call(task, token, "succeed", 116.0)
    assert isinstance(late, CallbackRefused) and late.status == 410 and "attempt ended" in late.reason


def test_a_cancel_fences_the_parked_run_rolls_it_back_and_spends_its_token():
    task, token = waiting_with_token()
    cancelled = cancel(task, "op", "change freeze", Timing(130.0), ids=IDS)
    assert not isinstance(cancelled, Refusal), cancelled
    assert cancelled.Steps[1].State is StepState.ROLLING_BACK  # its command ran: it is rolled back
    late = call(cancelled, token, "succeed", 131.0)
    assert isinstance(late, CallbackRefused) and late.status == 410


def test_refusals_unknown_token_no_token_asked_and_an_items_run():
    task, token = waiting_with_token()
    forged = new_token(task.TaskId)
    unknown = call(task, forged, "succeed", 130.0)
    assert isinstance(unknown, CallbackRefused) and unknown.status == 404 and task.TaskId not in unknown.reason
    bare = claimed(finished(claimed(new(), 0, 101.0), 0, AttemptResult(ResultCode.OK), 102.0), 1, 110.0)
    refused = finished(bare, 1, answered(60), 111.0)  # await_callback without a token: a failure
    assert refused.Steps[1].Code is ResultCode.FAILED and "without a token" in refused.TaskMessage
    lost = open_callback(bare, run_of(bare, 1).DispatchId, "someone-else", "h")
    assert isinstance(lost, Refusal) and "claim lost" in lost.reason


@pytest.mark.parametrize("output, problem", [
    ({"_baton": {"await_callback": {"timeout": 0}}}, "timeout must be seconds"),
    ({"_baton": {"await_callback": {"timeout": 10, "heartbeat": 20}}}, "heartbeat must be seconds"),
    ({"_baton": {"await_callback": {"timeout": 10}}, "x": 1}, "carries no output"),
    ({"_baton": {"await_callback": {"timeout": True}}}, "timeout must be seconds"),
    ({"_baton": {"await_callback": {"wait": 10}}}, "must be"),
])
def test_a_malformed_await_answer_names_its_problem(output, problem):
    assert problem in parse_await(output)


def test_a_task_that_waits_for_no_callback_is_written_as_before():
    """Rolling upgrade: the new fields are left out while empty, so the previous release reads it."""
    task = finished(claimed(new(), 0, 101.0), 0, AttemptResult(ResultCode.OK), 102.0)
    task = finished(claimed(task, 1, 110.0), 1, AttemptResult(ResultCode.FAILED, "boom"), 111.0)
    stored = task.to_json()
    assert '"Callback"' not in stored and '"Callbacks"' not in stored
    waiting, _ = waiting_with_token()
    assert '"Callback"' in waiting.to_json()
