"""Pause, resume and skip as pure changes (common/engine/operator/flow.py), on lines and graphs, with
every refusal; each is recorded in the history with the operator and the reason."""

from __future__ import annotations

import pytest

from common.engine.operator.actions import cancel
from common.engine.operator.flow import pause, resume, skip
from common.engine.states import Phase, ResultCode, RunState, StepState, TaskStatus
from common.engine.core.entries import Refusal, Timing, claim, finish_attempt
from tests.support.builders import counter_ids, make_step
from tests.unit.test_graph_transitions import FAIL, OK, diamond, do, graph, message, new, runs

N, R = Phase.NORMAL, Phase.ROLLBACK
IDS = counter_ids("f")
T = Timing(300.0)


def act(action, task, reason="maintenance window", timing=T, **kwargs):
    result = action(task, "olga", reason, timing, ids=IDS, **kwargs)
    assert not isinstance(result, Refusal), result
    return result


def history(task):
    return [(e.Event, e.Actor, e.Message) for e in task.History]


def test_pause_withdraws_what_nobody_claimed_and_starts_nothing_until_resumed():
    task = new(diamond())
    assert runs(task) == [(0, None, N)]
    paused = act(pause, task)
    assert paused.Paused.Actor == "olga" and paused.Paused.Reason == "maintenance window"
    assert paused.Runs == [] and paused.Outbox == [] and paused.Steps[0].State is StepState.WAITING
    assert ("paused", "olga", "maintenance window") in history(paused)
    late = claim(paused, message(task, 0), "w", Timing(301.0))
    assert isinstance(late, Refusal) and "stale" in late.reason  # the withdrawn dispatch is fenced
    resumed = act(resume, paused, reason="window over", timing=Timing(400.0))
    assert resumed.Paused is None and runs(resumed) == [(0, None, N)]
    assert ("resumed", "olga", "window over") in history(resumed)


def test_a_claimed_step_finishes_while_paused_and_its_successors_wait_for_resume():
    task = do(new(diamond()), 0)  # a done: b and c dispatched
    claimed_b = claim(task, message(task, 1), "w", Timing(201.0))
    paused = act(pause, claimed_b)
    assert runs(paused) == [(1, None, N)]  # b runs on; c (never claimed) is withdrawn
    assert paused.Steps[2].State is StepState.WAITING
    done_b = finish_attempt(paused, message(task, 1).DispatchId, "w", OK, Timing(302.0), ids=IDS)
    assert done_b.Steps[1].State is StepState.SUCCEEDED and done_b.Runs == []  # d is not started
    resumed = act(resume, done_b, timing=Timing(310.0))
    assert runs(resumed) == [(2, None, N)]
    finished = do(do(resumed, 2), 3)
    assert finished.TaskStatus is TaskStatus.SUCCESS


@pytest.mark.usefixtures("inline_items")
def test_pause_holds_for_each_items_and_a_failure_still_rolls_back():
    steps = graph(("a", []), ("b", [0]))
    steps[1].ForEach, steps[1].MaxParallel = "hosts", 1
    task = do(new(steps, {"hosts": ["h1", "h2", "h3"]}), 0)
    first = message(task, 1, item=0)
    paused = act(pause, claim(task, first, "w", Timing(201.0)))
    item_done = finish_attempt(paused, first.DispatchId, "w", OK, Timing(302.0), ids=IDS)
    assert item_done.Runs == [] and item_done.Steps[1].Items[1].State is StepState.WAITING
    resumed = act(resume, item_done)
    assert runs(resumed) == [(1, 1, N)]
    # A failure while paused: the rollback is never held up, and the pause is gone.
    second = message(resumed, 1, item=1)
    paused = act(pause, claim(resumed, second, "w", Timing(303.0)))
    failed = finish_attempt(paused, second.DispatchId, "w", FAIL, Timing(304.0), ids=IDS)
    assert failed.TaskStatus is TaskStatus.ROLLING_BACK and failed.Paused is None
    assert runs(failed) == [(1, 0, R)]  # max_parallel 1, backward too
    assert failed.Steps[1].Items[2].State is StepState.WAITING  # never started


def test_pause_and_resume_refusals():
    task = new(diamond())
    paused = act(pause, task)
    assert "paused already by olga" in pause(paused, "ivan", "x", T).reason
    assert "not paused" in resume(task, "ivan", "x", T).reason
    cancelled = act(cancel, task)
    assert cancelled.TaskStatus is TaskStatus.ROLLED_BACK
    assert "only a task going forward" in pause(cancelled, "ivan", "x", T).reason
    with pytest.raises(ValueError, match="reason"):
        pause(task, "ivan", "  ", T)


def test_cancel_of_a_paused_task_rolls_it_back():
    task = act(pause, do(new(diamond()), 0))
    cancelled = act(cancel, task)
    assert cancelled.Paused is None and cancelled.TaskStatus is TaskStatus.ROLLING_BACK
    assert runs(cancelled) == [(0, None, R)]


def retrying_line():
    steps = [make_step("a"), make_step("b", retry=3), make_step("c")]
    task = do(new(steps), 0)
    return do(task, 1, FAIL)  # b failed its first attempt: its retry is pending


def test_skip_a_step_that_keeps_failing_and_the_flow_goes_on():
    task = retrying_line()
    assert task.Steps[1].State is StepState.RUNNING and task.Steps[1].Code is ResultCode.FAILED
    retry_message = message(task, 1)
    skipped = act(skip, task, reason="monitoring is down, registered by hand", cursor=1)
    assert skipped.Steps[1].State is StepState.OPERATOR_SKIPPED
    assert skipped.Steps[1].Message == "skipped by olga: monitoring is down, registered by hand"
    assert ("operator_skipped", "olga", "monitoring is down, registered by hand") in history(skipped)
    assert runs(skipped) == [(2, None, N)]
    assert isinstance(claim(skipped, retry_message, "w", Timing(301.0)), Refusal)
    done = do(skipped, 2)
    assert done.TaskStatus is TaskStatus.SUCCESS
    # Rolled back later (c fails instead): the skipped step has nothing to undo.
    failed = do(skipped, 2, FAIL)
    while failed.Runs:
        cursor = failed.Runs[0].Cursor
        failed = do(failed, cursor, phase=R)
    assert failed.TaskStatus is TaskStatus.ROLLED_BACK
    assert failed.Steps[1].State is StepState.OPERATOR_SKIPPED and failed.Steps[0].State is StepState.ROLLED_BACK


@pytest.mark.usefixtures("inline_items")
def test_skip_an_item_of_a_for_each_step():
    steps = graph(("a", []), ("b", [0]), ("c", [1]))
    steps[1].ForEach, steps[1].NormalRetry = "hosts", 2
    task = do(new(steps, {"hosts": ["h1", "h2"]}), 0)
    task = do(do(task, 1, item=0), 1, FAIL, item=1)  # item 1 failed once: retrying
    with pytest.raises(ValueError, match="name the item"):
        skip(task, "olga", "x", T, cursor=1)
    skipped = act(skip, task, cursor=1, item=1)
    assert skipped.Steps[1].State is StepState.SUCCEEDED
    assert skipped.Parameters["b"] == [{}, {}] and runs(skipped) == [(2, None, N)]


def test_skip_a_failed_step_of_a_rolled_back_task_runs_it_again_without_that_step():
    task = do(new([make_step("a"), make_step("b"), make_step("c")]), 0)
    task = do(task, 1, FAIL)
    task = do(do(task, 1, phase=R), 0, phase=R)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    assert "did not fail" in skip(task, "olga", "x", T, cursor=0).reason
    again = act(skip, task, cursor=1)
    assert again.Generation == 1 and again.TaskStatus is TaskStatus.NOT_STARTED
    assert again.Steps[1].State is StepState.OPERATOR_SKIPPED and runs(again) == [(0, None, N)]
    assert do(do(again, 0), 2).TaskStatus is TaskStatus.SUCCESS


def test_skip_refusals():
    task = new(diamond())
    assert "has not failed an attempt" in skip(task, "olga", "x", T, cursor=0).reason
    with pytest.raises(ValueError, match="steps 0 to 3"):
        skip(task, "olga", "x", T, cursor=9)
    with pytest.raises(ValueError, match="item 0"):
        skip(task, "olga", "x", T, cursor=0, item=0)
    failing = retrying_line()
    claimed_retry = claim(failing, message(failing, 1), "w", Timing(301.0))
    assert claimed_retry.Runs[0].State is RunState.RUNNING
    stopped = act(skip, claimed_retry, cursor=1)  # a claimed retry loses its run: its lease renewal fails
    assert all(r.Cursor != 1 for r in stopped.Runs)
    assert "ROLLING_BACK" in skip(do(task := new(diamond()), 0, FAIL), "olga", "x", T, cursor=0).reason


def test_pause_keeps_the_pending_retry_of_a_unit_that_ran():
    task = retrying_line()  # b ran once and failed: its retry waits out its backoff
    paused = act(pause, task)
    assert runs(paused) == [(1, None, N)] and paused.Steps[1].State is StepState.RUNNING
    assert "withdrawn" not in [e.Event for e in paused.History]
