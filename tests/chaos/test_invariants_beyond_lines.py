"""The invariant checker on the documents of graphs, sub-flows, operator actions, deadlines and
locks: what the engine writes passes, and each broken promise is caught."""

from __future__ import annotations

import pytest

from common.engine.core.entries import create_task
from common.engine.document import Task
from common.engine.states import Phase, TaskStatus
from tests.chaos.hand_made import (
    FAIL,
    OK,
    attempt,
    drive,
    fail_at,
    graph_rolled_back,
    graph_rollout,
    new_task,
    ok,
    rules,
    sent,
    succeed,
    task_ids,
    tick,
)
from tests.chaos.invariants import check_task
from tests.support.builders import counter_ids, make_step

# --- graph tasks -------------------------------------------------------------------------------


@pytest.mark.usefixtures("inline_items")
def test_a_graph_task_rolled_back_in_reverse_topological_order_passes():
    task = graph_rolled_back()
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    violations, _ = check_task(task)
    assert violations == []


@pytest.mark.usefixtures("inline_items")
def test_a_graph_task_whose_root_was_undone_before_its_dependents_fails_the_check():
    task = graph_rolled_back()
    events = task.History
    root = next(i for i, e in enumerate(events) if e.Event == "dispatched" and e.Cursor == 0 and e.Phase is Phase.ROLLBACK)
    first_item_undo = next(i for i, e in enumerate(events) if e.Event == "dispatched" and e.Cursor == 1
                           and e.Phase is Phase.ROLLBACK)
    events.insert(first_item_undo, events.pop(root))  # the root's rollback began first
    violations, _ = check_task(task)
    assert any(v.rule == "rollback" and "began before" in v.detail for v in violations)


@pytest.mark.usefixtures("inline_items")
def test_an_item_committed_twice_is_caught():
    task = graph_rolled_back()
    twice = next(e for e in task.History if e.Event == "step_succeeded" and e.Item == 0)
    task.History.append(twice.model_copy())
    violations, _ = check_task(task)
    assert any(v.rule == "once" and "step 1 item 0 normal: outcome committed 2 times" in v.detail for v in violations)


# --- operator actions and deadlines (docs/design/operations.md)
# ----------------------------------------------


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
    timed = sent(create_task(task_type="t", steps=steps, parameters={}, timing=tick(), task_id=task_ids(),
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
    from common.store.sqlite.tasks import SqliteStore
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



# --- a failure budget, a hold and its redrive ------------------------------------------------------


def _details(task: Task) -> list[str]:
    violations, _ = check_task(task)
    return [f"[{v.rule}] {v.detail}" for v in violations]


@pytest.mark.usefixtures("inline_items")
def test_a_rollout_with_a_tolerated_item_and_a_redriven_one_passes():
    task = graph_rollout()
    assert task.TaskStatus is TaskStatus.SUCCESS and _details(task) == []


@pytest.mark.usefixtures("inline_items")
def test_a_rollback_in_a_success_of_an_item_not_tolerated_is_caught():
    task = graph_rollout()
    task.Steps[1].ToleratedItems = []
    found = _details(task)
    assert "[rollback] SUCCESS but rollbacks ran" in found, found
    assert any(d.startswith("[forward] task status ROLLING_BACK -> SUCCESS") for d in found), found


@pytest.mark.usefixtures("inline_items")
def test_an_item_dispatched_again_after_failing_without_a_redrive_is_caught():
    task = graph_rollout()
    task.History = [e for e in task.History if e.Event != "redriven"]
    found = _details(task)
    assert "[once] step 1 item 2 normal: outcome committed 2 times" in found, found
    assert any(d.startswith("[forward] step 1 item 2: failed -> running") for d in found), found


@pytest.mark.usefixtures("inline_items")
def test_a_redrive_concluding_again_an_item_that_had_succeeded_or_was_tolerated_is_caught():
    for item in (0, 1):
        task = graph_rollout()
        at = next(i for i, e in enumerate(task.History) if e.Event == "redriven")
        last = next(e for e in task.History if e.Item == item and e.Event in ("step_succeeded", "step_failed"))
        task.History.insert(at + 1, last.model_copy(update={"Event": "step_succeeded", "Attempt": 2}))
        assert f"[once] step 1 item {item} normal: outcome committed 2 times" in _details(task), (item, _details(task))
