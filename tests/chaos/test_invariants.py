"""The invariant checker on hand-made documents: it passes clean runs and catches each broken rule.

Documents are made by driving the real pure transitions (so a clean history is exactly what
the engine writes), then tampered with to break one promise at a time.
"""

from __future__ import annotations

import itertools

import pytest

from common.engine.document import Alarm, HistoryEvent, StepMessage, Task
from common.engine.states import Phase, ResultCode, RunState, StepState, TaskStatus
from common.engine.transitions import (
    AttemptResult,
    Refusal,
    Timing,
    claim,
    create_task,
    expire,
    finish_attempt,
    mark_sent,
    release,
)
from tests.chaos.invariants import check_invariants, check_task, expected_rollbacks
from tests.support.builders import counter_ids, make_step, only_run

OK = AttemptResult(ResultCode.OK)
FAIL = AttemptResult(ResultCode.FAILED, "boom")
_clock = itertools.count(1000)
_task_ids = counter_ids("task")


def tick() -> Timing:
    return Timing(float(next(_clock)), lease=5.0, redeliver_after=10.0)


def new_task(rollbacks=(True, True, True), retry=0) -> Task:
    steps = [make_step(name, rollback=rb, retry=retry) for name, rb in zip("abc", rollbacks)]
    return create_task(task_type="t", steps=steps, parameters={}, timing=tick(), task_id=_task_ids(), ids=counter_ids())


def ok(task: Task) -> Task:
    assert not isinstance(task, Refusal), task
    return task


def sent(task: Task) -> Task:
    """Mark every outbox entry sent, as the publisher does after the broker's confirm."""
    for entry in list(task.Outbox):
        task = ok(mark_sent(task, entry.DispatchId))
    return task


def message(task: Task) -> StepMessage:
    a = only_run(task)
    step = task.Steps[a.Cursor]
    return StepMessage(TaskId=task.TaskId, Cursor=a.Cursor, Type=a.Phase, Module=step.module(a.Phase),
                       Command=step.command(a.Phase), Timeout=1, Retry=0, DispatchId=a.DispatchId, Attempt=a.Attempt)


def attempt(task: Task, result: AttemptResult, owner="w1") -> Task:
    m = message(task)
    task = ok(claim(task, m, owner, tick()))
    return sent(ok(finish_attempt(task, m.DispatchId, owner, result, tick(), ids=counter_ids("n"))))


def drive(task: Task, verdict) -> Task:
    """Run the task to the end; `verdict(cursor, phase, attempt)` says whether an attempt works."""
    task = sent(task)
    while only_run(task) is not None:
        a = only_run(task)
        task = attempt(task, OK if verdict(a.Cursor, a.Phase, a.Attempt) else FAIL)
    return task


def succeed(*_):
    return True


def fail_at(cursor, rollback_fails_at=None):
    def verdict(c, phase, _attempt):
        if phase is Phase.NORMAL:
            return c != cursor
        return c != rollback_fails_at

    return verdict


def rules(task: Task) -> set[str]:
    violations, _ = check_task(task)
    return {v.rule for v in violations}


def event(name, cursor=None, phase=None, attempt=None, actor="w1") -> HistoryEvent:
    return HistoryEvent(Time=0.0, Event=name, Cursor=cursor, Phase=phase, Attempt=attempt, Actor=actor)


# --- clean runs pass -------------------------------------------------------------------------------


def test_clean_success_rolled_back_and_rollback_failed_pass():
    tasks = [
        drive(new_task(), succeed),
        drive(new_task(), fail_at(0)),
        drive(new_task(), fail_at(2)),
        drive(new_task(), fail_at(2, rollback_fails_at=1)),
        drive(new_task(rollbacks=(True, False, True)), fail_at(2)),
        drive(new_task(rollbacks=(False, True, True)), fail_at(0)),
    ]
    statuses = [t.TaskStatus for t in tasks]
    assert statuses == [TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK, TaskStatus.ROLLED_BACK,
                        TaskStatus.ROLLBACK_FAILED, TaskStatus.ROLLED_BACK, TaskStatus.ROLLED_BACK]
    alarms = [Alarm(AlarmId="a1", Kind="rollback_failed", Time=0, Message="", TaskId=tasks[3].TaskId)]
    report = check_invariants(tasks, accepted=[t.TaskId for t in tasks], alarms=alarms,
                              queues={"mod": 0, "mod.dead": 0})
    assert report.ok, report.summary()
    assert report.tasks == 6 and report.duplicate_commits == 0 and report.duplicate_executions == 0
    assert report.statuses == {"SUCCESS": 1, "ROLLED_BACK": 4, "ROLLBACK_FAILED": 1}
    assert expected_rollbacks(tasks[2]) == [2, 1, 0]
    assert expected_rollbacks(tasks[4]) == [2, 0]  # the step without rollback is passed over
    assert tasks[4].Steps[1].State is StepState.SKIPPED


def test_retries_count_as_executions_not_duplicates():
    task = drive(new_task(retry=2), lambda c, p, a: a >= 2)  # every step fails once, then works
    assert task.TaskStatus is TaskStatus.SUCCESS
    violations, figures = check_task(task)
    assert not violations
    assert figures.executions == 6 and figures.duplicate_executions == 0 and figures.lost_attempts == 0


def test_lease_lapse_is_a_duplicate_execution_not_a_duplicate_commit():
    task = sent(new_task(retry=1))
    m = message(task)
    task = ok(claim(task, m, "dead-worker", tick()))
    later = Timing(only_run(task).Deadline + 1, lease=5.0, redeliver_after=10.0)
    task = sent(ok(expire(task, later, ids=counter_ids("s"))))  # the sweeper: WORKER_LOST
    task = drive(task, succeed)
    violations, figures = check_task(task)
    assert not violations, violations
    assert (figures.executions, figures.duplicate_executions, figures.lost_attempts) == (4, 1, 1)
    assert figures.duplicate_commits == 0


def test_release_then_second_claim_of_the_same_attempt_is_allowed():
    task = sent(new_task())
    m = message(task)
    task = ok(claim(task, m, "w1", tick()))
    task = sent(ok(release(task, m.DispatchId, "w1", tick(), ids=counter_ids("r"))))
    task = drive(task, succeed)
    violations, figures = check_task(task)
    assert not violations, violations
    assert figures.duplicate_executions == 1 and figures.duplicate_commits == 0


def test_redispatch_of_a_never_claimed_run_is_clean():
    task = sent(new_task())
    later = Timing(only_run(task).Deadline + 1, lease=5.0, redeliver_after=10.0)
    task = sent(ok(expire(task, later)))
    assert task.History[-1].Event == "redispatched"
    assert not check_task(drive(task, succeed))[0]


# --- each broken promise is caught -----------------------------------------------------------------


def test_not_final_active_run_and_unsent_outbox_are_caught():
    running = attempt(sent(new_task()), OK)  # step 1 dispatched, step 0 done
    assert running.TaskStatus is TaskStatus.RUNNING
    assert "final" in rules(running)
    unsent = drive(new_task(), succeed)
    unsent.Outbox = new_task().Outbox  # a dispatch the broker never confirmed
    assert rules(unsent) == {"final"}


def test_missing_accepted_task_is_lost():
    task = drive(new_task(), succeed)
    report = check_invariants([task], accepted=[task.TaskId, "vanished"])
    assert [v.rule for v in report.violations] == ["lost"]


def test_outcome_committed_twice_is_caught_and_counted():
    task = drive(new_task(), succeed)
    again = next(e for e in task.History if e.Event == "step_succeeded" and e.Cursor == 1)
    task.History.insert(task.History.index(again) + 1, again.model_copy())
    violations, figures = check_task(task)
    assert "once" in {v.rule for v in violations}
    assert figures.duplicate_commits == 1


def test_rollback_committed_twice_is_caught():
    task = drive(new_task(), fail_at(1))
    again = next(e for e in task.History if e.Event == "rollback_succeeded" and e.Cursor == 0)
    task.History.insert(task.History.index(again), again.model_copy())
    assert "once" in rules(task)
    assert check_invariants([task]).duplicate_commits == 1


def test_attempt_failure_committed_twice_and_claim_twice_are_caught():
    task = drive(new_task(retry=1), lambda c, p, a: a >= 2)
    failed = next(e for e in task.History if e.Event == "attempt_failed")
    task.History.insert(task.History.index(failed), failed.model_copy())
    violations, _ = check_task(task)
    assert any("failure committed 2 times" in v.detail for v in violations)
    task2 = drive(new_task(), succeed)
    claimed = next(e for e in task2.History if e.Event == "claimed")
    task2.History.insert(task2.History.index(claimed), claimed.model_copy(update={"Actor": "w2"}))
    assert any("claimed 2 times" in v.detail for v in check_task(task2)[0])


def test_rollbacks_out_of_order_or_missing_are_caught():
    task = drive(new_task(), fail_at(2))
    rb = [e for e in task.History if e.Event == "rollback_succeeded"]
    i, j = task.History.index(rb[0]), task.History.index(rb[1])
    task.History[i], task.History[j] = task.History[j], task.History[i]  # 1 before 2
    assert "rollback" in rules(task)

    skipped_one = drive(new_task(), fail_at(2))
    skipped_one.History = [e for e in skipped_one.History if not (e.Event == "rollback_succeeded" and e.Cursor == 1)]
    assert "rollback" in rules(skipped_one)


def test_rollback_of_a_step_never_reached_is_caught():
    task = drive(new_task(), fail_at(0))
    final = next(i for i, e in enumerate(task.History) if e.Event == "task_rolled_back")
    task.History.insert(final, event("rollback_succeeded", 1, Phase.ROLLBACK, 1))
    assert "rollback" in rules(task)


def test_success_with_a_rollback_or_a_missing_step_is_caught():
    task = drive(new_task(), succeed)
    final = next(i for i, e in enumerate(task.History) if e.Event == "task_success")
    task.History.insert(final, event("rollback_succeeded", 2, Phase.ROLLBACK, 1))
    assert "rollback" in rules(task)
    gap = drive(new_task(), succeed)
    gap.History = [e for e in gap.History if not (e.Event == "step_succeeded" and e.Cursor == 1)]
    assert "rollback" in rules(gap)


def test_rollback_failed_must_end_the_rollbacks():
    task = drive(new_task(), fail_at(2, rollback_fails_at=1))
    assert not rules(task)
    final = next(i for i, e in enumerate(task.History) if e.Event == "task_rollback_failed")
    task.History.insert(final, event("rollback_succeeded", 0, Phase.ROLLBACK, 1))
    assert "rollback" in rules(task)


def test_state_going_backwards_is_caught():
    task = drive(new_task(), succeed)
    done = next(i for i, e in enumerate(task.History) if e.Event == "step_succeeded" and e.Cursor == 0)
    task.History.insert(done + 1, event("dispatched", 0, Phase.NORMAL, 2, actor="w9"))  # SUCCEEDED -> RUNNING
    assert "forward" in rules(task)


def test_event_after_the_final_one_is_caught():
    task = drive(new_task(), succeed)
    task.History.append(event("claimed", 2, Phase.NORMAL, 1))
    assert "forward" in rules(task)


def test_document_state_disagreeing_with_history_is_caught():
    task = drive(new_task(), succeed)
    task.Steps[1].State = StepState.RUNNING
    assert "forward" in rules(task)
    task2 = drive(new_task(), fail_at(1))
    task2.TaskStatus = TaskStatus.SUCCESS  # the document claims success after a rollback
    assert {"forward", "rollback"} <= rules(task2)


def test_claim_without_dispatch_is_caught():
    task = drive(new_task(), succeed)
    task.History = [e for e in task.History if not (e.Event == "dispatched" and e.Cursor == 2)]
    assert "forward" in rules(task)


def test_alarm_missing_or_extra_is_caught():
    failed = drive(new_task(), fail_at(1, rollback_fails_at=1))
    fine = drive(new_task(), succeed)
    assert [v.rule for v in check_invariants([failed, fine], alarms=[]).violations] == ["alarm"]
    twice = [Alarm(AlarmId=f"a{i}", Kind="rollback_failed", Time=0, Message="", TaskId=failed.TaskId) for i in range(2)]
    assert [v.rule for v in check_invariants([failed], alarms=twice).violations] == ["alarm"]
    dead = [Alarm(AlarmId="d", Kind="dead_letter", Time=0, Message="", TaskId=fine.TaskId),
            Alarm(AlarmId="a", Kind="rollback_failed", Time=0, Message="", TaskId=failed.TaskId)]
    assert check_invariants([failed, fine], alarms=dead).ok


def test_queues_must_be_drained_except_expected_dead_letters():
    report = check_invariants([], queues={"mysql": 0, "mysql.dead": 3, "resource": 2, "resource.dead": 0},
                              expected_dead_letters={"mysql.dead": 3})
    assert [v.detail for v in report.violations] == ["queue 'resource' holds 2 message(s), expected 0"]
    short = check_invariants([], queues={"mysql.dead": 2}, expected_dead_letters={"mysql.dead": 3})
    assert not short.ok
    missing = check_invariants([], queues={}, expected_dead_letters={"monitor.dead": 1})
    assert not missing.ok


def test_running_task_with_pending_run_is_reported_with_its_step():
    task = sent(new_task())
    violations, _ = check_task(task)
    assert any("run left: step 0 normal attempt 1 pending" in v.detail for v in violations)
    assert only_run(task).State is RunState.PENDING


# --- graph tasks -------------------------------------------------------------------------------


def _graph_rolled_back():
    from tests.unit.test_graph_transitions import FAIL as G_FAIL
    from tests.unit.test_graph_transitions import R as G_R
    from tests.unit.test_graph_transitions import do as g_do
    from tests.unit.test_graph_transitions import fan_out, new

    task = g_do(new(fan_out(max_parallel=2), {"hosts": [1, 2, 3]}), 0)
    task = g_do(task, 1, item=0)
    task = g_do(task, 1, G_FAIL, item=1)  # item 2 was dispatched by item 0's success: cancelled
    for item in (0, 1):
        task = g_do(task, 1, item=item, phase=G_R)
    return g_do(task, 0, phase=G_R)


@pytest.mark.usefixtures("inline_items")
def test_a_graph_task_rolled_back_in_reverse_topological_order_passes():
    task = _graph_rolled_back()
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    violations, _ = check_task(task)
    assert violations == []


@pytest.mark.usefixtures("inline_items")
def test_a_graph_task_whose_root_was_undone_before_its_dependents_fails_the_check():
    task = _graph_rolled_back()
    events = task.History
    root = next(i for i, e in enumerate(events) if e.Event == "dispatched" and e.Cursor == 0 and e.Phase is Phase.ROLLBACK)
    first_item_undo = next(i for i, e in enumerate(events) if e.Event == "dispatched" and e.Cursor == 1
                           and e.Phase is Phase.ROLLBACK)
    events.insert(first_item_undo, events.pop(root))  # the root's rollback began first
    violations, _ = check_task(task)
    assert any(v.rule == "rollback" and "began before" in v.detail for v in violations)


@pytest.mark.usefixtures("inline_items")
def test_an_item_committed_twice_is_caught():
    task = _graph_rolled_back()
    twice = next(e for e in task.History if e.Event == "step_succeeded" and e.Item == 0)
    task.History.append(twice.model_copy())
    violations, _ = check_task(task)
    assert any(v.rule == "once" and "step 1 item 0 normal: outcome committed 2 times" in v.detail for v in violations)


# --- operator actions and deadlines (DESIGN.md sec. 10) ----------------------------------------------


def test_pause_resume_skip_and_a_deadline_keep_the_invariants():
    from common.engine.operator.flow import pause, resume, skip

    paused = sent(ok(pause(new_task(), "olga", "window", tick())))  # step 0's dispatch withdrawn
    task = drive(ok(resume(paused, "olga", "go", tick())), succeed)
    assert task.TaskStatus is TaskStatus.SUCCESS and rules(task) == set()
    failing = attempt(sent(new_task(retry=2)), OK)
    failing = attempt(failing, FAIL)  # step 1 failed once: its retry is pending
    skipped = drive(ok(skip(failing, "olga", "done by hand", tick(), cursor=1)), succeed)
    assert skipped.TaskStatus is TaskStatus.SUCCESS and rules(skipped) == set()
    rolled = drive(ok(skip(failing, "olga", "done by hand", tick(), cursor=1)), fail_at(2))
    assert rolled.TaskStatus is TaskStatus.ROLLED_BACK and rules(rolled) == set()
    steps = [make_step(name) for name in "abc"]
    timed = sent(create_task(task_type="t", steps=steps, parameters={}, timing=tick(), task_id=_task_ids(),
                             ids=counter_ids(), deadline_seconds=1.5))  # fmt: skip
    timed = attempt(timed, OK)  # past the deadline by the time it ends: the task rolls back
    timed = drive(timed, succeed)
    assert timed.TaskStatus is TaskStatus.ROLLED_BACK and "deadline passed" in timed.TaskMessage
    assert rules(timed) == set()
    broken = timed.model_copy(deep=True)
    broken.History = [e for e in broken.History if e.Event != "deadline_passed"]
    assert "rollback" in rules(broken)  # without the deadline, a success then a rollback is wrong


# --- sub-flows and locks: what the engine writes, then one promise broken ------------------------


def sub_flow_run(tmp_path, fails, task_id: str) -> tuple[Task, Task]:
    """A parent (a, a sub-flow of x and y, z) run to the end on the real child relay; returns the
    parent and its child."""
    from common.store.sqlite import SqliteStore
    from tests.support.dag_sim import Simulator
    from tests.unit.test_graph_transitions import new as new_graph_task
    from tests.unit.test_sub_flow_transitions import sub_flow_step

    store = SqliteStore(tmp_path / f"{task_id}.db")
    try:
        steps = [make_step("a"), sub_flow_step("sub", [make_step("x"), make_step("y")]), make_step("z")]
        simulator = Simulator(store, fails)
        simulator.submit(new_graph_task(steps, {"name": "n"}, task_id=task_id))
        simulator.run(lambda n: 0)
        return store.get(task_id), store.get(f"{task_id}.1")
    finally:
        store.close()


@pytest.mark.parametrize("case, fails, statuses", [
    ("child rolled back", lambda t, c, i, p: t == "child" and c == 1 and p is Phase.NORMAL,
     (TaskStatus.ROLLED_BACK, TaskStatus.ROLLED_BACK)),
    ("child rollback failed", lambda t, c, i, p: t == "child" and (c, p) in ((1, Phase.NORMAL), (0, Phase.ROLLBACK)),
     (TaskStatus.ROLLBACK_FAILED, TaskStatus.ROLLBACK_FAILED)),
    ("child undone", lambda t, c, i, p: t == "t" and c == 2 and p is Phase.NORMAL,
     (TaskStatus.ROLLED_BACK, TaskStatus.ROLLED_BACK)),
])
def test_sub_flow_parents_and_children_pass(tmp_path, case, fails, statuses):
    parent, child = sub_flow_run(tmp_path, fails, f"p-{case.replace(' ', '-')}")
    assert (parent.TaskStatus, child.TaskStatus) == statuses
    assert check_task(parent)[0] == [] and check_task(child)[0] == []


def test_an_undone_child_that_had_not_succeeded_or_ends_twice_is_caught(tmp_path):
    _parent, child = sub_flow_run(tmp_path, lambda t, c, i, p: t == "t" and c == 2 and p is Phase.NORMAL, "pu")
    ended_twice = child.model_copy(deep=True)
    ended_twice.History = [e for e in ended_twice.History if e.Event != "undo_requested"]
    assert "once" in {v.rule for v in check_task(ended_twice)[0]}
    never_succeeded = child.model_copy(deep=True)
    never_succeeded.History = [e for e in never_succeeded.History if not (e.Event == "step_succeeded" and e.Cursor == 1)]
    assert any(v.rule == "rollback" and "normal outcomes were" in v.detail for v in check_task(never_succeeded)[0])


def test_a_sub_flow_rollback_outcome_still_needs_the_rollback_phase(tmp_path):
    parent, _child = sub_flow_run(tmp_path, lambda t, c, i, p: t == "child" and c == 1 and p is Phase.NORMAL, "pp")
    event = next(e for e in parent.History if e.Event == "rollback_succeeded" and e.Cursor == 1)
    event.Phase = Phase.NORMAL
    assert any("recorded for the" in v.detail for v in check_task(parent)[0])


def test_the_lock_release_may_follow_the_final_event_but_nothing_else():
    task = drive(new_task(), succeed)
    final = task.History[-1]
    task.History.append(final.model_copy(update={"Event": "lock_released", "Message": "released lock k"}))
    assert check_task(task)[0] == []
    task.History.append(final.model_copy(update={"Event": "claimed"}))
    assert any("after the task's final event" in v.detail for v in check_task(task)[0])
