"""Sub-flows (docs/design/sub-flows.md) on the engine: a child task per sub-flow step or per item of
a for_each one, its outcome concluding the parent's unit, and the parent's cancel, pause, resume
and rollback reaching its children. Real ChildRelay on a real SQLite store (tests/support/dag_sim)."""

from __future__ import annotations

import pytest

from common.engine.document import ChildTemplate, NotifyTarget
from common.engine.core.notifications import add_notifications
from common.engine.states import RunState, StepState, TaskStatus
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import Timing
from tests.support.builders import make_step
from tests.support.dag_sim import Simulator
from tests.support.graph_checks import rollback_violations
from tests.unit.test_graph_transitions import IDS, N, R, new

# --- sub-flows ------------------------------------------------------------------------------------


def sub_flow_step(name, child_steps, child_type="child"):
    step = make_step(name)
    step.NormalModule = step.NormalCommand = step.RollbackModule = step.RollbackCommand = None
    step.Flow, step.FlowInputs = child_type, {"who": "name"}
    step.FlowTemplate = ChildTemplate(TaskType=child_type, Steps=child_steps, Defaults={"level": 1})
    return step


@pytest.fixture
def sim(tmp_path):
    store = SqliteStore(tmp_path / "sim.db")
    yield lambda fails=lambda *a: False: Simulator(store, fails)
    store.close()


def run_all(simulator):
    simulator.run(lambda n: 0)


def test_a_sub_flow_runs_its_child_and_takes_its_output(sim):
    steps = [make_step("a"), sub_flow_step("sub", [make_step("x"), make_step("y")]), make_step("z")]
    simulator = sim()
    simulator.submit(new(steps, {"name": "n1"}, task_id="p1"))
    run_all(simulator)
    parent, child = simulator.store.get("p1"), simulator.store.get("p1.1")
    assert parent.TaskStatus is TaskStatus.SUCCESS and child.TaskStatus is TaskStatus.SUCCESS
    assert parent.Steps[1].ChildTaskId == "p1.1" and child.Parent.TaskId == "p1" and child.Parent.Cursor == 1
    assert child.Parameters["who"] == "n1" and child.Parameters["level"] == 1
    assert parent.Parameters["sub"] == {"out_0": None, "out_1": None}


def test_a_sub_flow_failure_rolls_the_child_back_then_the_parent(sim):
    steps = [make_step("a"), sub_flow_step("sub", [make_step("x"), make_step("y")]), make_step("z")]
    simulator = sim(lambda task_type, cursor, item, phase: task_type == "child" and cursor == 1 and phase is N)
    simulator.submit(new(steps, {"name": "n1"}, task_id="p2"))
    run_all(simulator)
    parent, child = simulator.store.get("p2"), simulator.store.get("p2.1")
    assert child.TaskStatus is TaskStatus.ROLLED_BACK
    assert parent.TaskStatus is TaskStatus.ROLLED_BACK
    assert [s.State for s in parent.Steps] == [StepState.ROLLED_BACK, StepState.ROLLED_BACK, StepState.WAITING]
    assert "child task p2.1" in parent.Steps[1].Message
    assert rollback_violations(parent) == [] and rollback_violations(child) == []
    # The parent's history tells both halves of the unit, each with its phase.
    assert [(e.Event, e.Phase) for e in parent.History if e.Cursor == 1 and e.Event != "dispatched"] == [
        ("step_failed", N), ("rollback_succeeded", R)]


def test_a_later_failure_undoes_a_child_that_succeeded(sim):
    steps = [make_step("a"), sub_flow_step("sub", [make_step("x")]), make_step("z")]
    simulator = sim(lambda task_type, cursor, item, phase: task_type == "t" and cursor == 2 and phase is N)
    simulator.submit(new(steps, {"name": "n1"}, task_id="p3"))
    run_all(simulator)
    parent, child = simulator.store.get("p3"), simulator.store.get("p3.1")
    assert child.TaskStatus is TaskStatus.ROLLED_BACK and "undo_requested" in [e.Event for e in child.History]
    assert parent.TaskStatus is TaskStatus.ROLLED_BACK
    assert [s.State for s in parent.Steps] == [StepState.ROLLED_BACK] * 3
    assert rollback_violations(parent) == []


def test_nested_sub_flows_roll_back_from_the_innermost(sim):
    inner = [make_step("leaf")]
    middle = [make_step("m0"), sub_flow_step("deep", inner, "inner")]
    steps = [make_step("top"), sub_flow_step("mid", middle, "middle")]
    simulator = sim(lambda task_type, cursor, item, phase: task_type == "inner" and phase is N)
    simulator.submit(new(steps, {"name": "n"}, task_id="g"))
    run_all(simulator)
    grand, middle_task, leaf = (simulator.store.get(i) for i in ("g", "g.1", "g.1.1"))
    assert (leaf.TaskStatus, middle_task.TaskStatus, grand.TaskStatus) == (TaskStatus.ROLLED_BACK,) * 3
    assert middle_task.Parent.TaskId == "g" and leaf.Parent.TaskId == "g.1"


def test_a_child_whose_rollback_fails_ends_the_parent_rollback_failed(sim):
    steps = [make_step("a"), sub_flow_step("sub", [make_step("x"), make_step("y")])]
    simulator = sim(lambda task_type, cursor, item, phase: task_type == "child" and (cursor, phase) in ((1, N), (0, R)))
    simulator.submit(new(steps, {"name": "n1"}, task_id="p4"))
    run_all(simulator)
    parent = simulator.store.get("p4")
    assert simulator.store.get("p4.1").TaskStatus is TaskStatus.ROLLBACK_FAILED
    assert parent.TaskStatus is TaskStatus.ROLLBACK_FAILED and parent.Steps[1].State is StepState.ROLLBACK_FAILED
    assert len(simulator.alarms) == 2  # one per task
    # The unit's normal phase failed (its child did), then its rollback (the child's own) failed.
    assert [(e.Event, e.Phase) for e in parent.History if e.Cursor == 1 and e.Event != "dispatched"] == [
        ("step_failed", N), ("rollback_failed", R), ("alarm_raised", R)]


def test_a_sub_flow_run_waits_for_its_child_and_is_never_claimed():
    steps = [sub_flow_step("sub", [make_step("x")])]
    task = new(steps, {"name": "n"}, task_id="p5")
    (run,) = task.Runs
    assert run.State is RunState.WAITING_CHILD and run.Deadline is None
    assert task.Outbox[0].Kind == "start_child" and task.Outbox[0].Body["TaskId"] == "p5.0"



def test_cancelling_a_parent_cancels_its_running_child_and_both_roll_back(sim):
    from common.engine.operator.actions import cancel

    steps = [make_step("a"), sub_flow_step("sub", [make_step("x"), make_step("y")]), make_step("z")]
    simulator = sim()
    simulator.submit(new(steps, {"name": "n1"}, task_id="p6"))
    while simulator.store.get("p6.1") is None or not simulator.claimed:
        simulator.step(0)  # deliver in order until the child's first step is claimed
    parent = mutate(simulator.store, "p6", lambda t: cancel(t, "op", "not needed", Timing(2000.0), ids=IDS))
    assert parent.TaskStatus is TaskStatus.RUNNING and parent.Outbox[-1].Kind == "cancel_child"
    simulator.flush(parent)
    run_all(simulator)
    parent, child = simulator.store.get("p6"), simulator.store.get("p6.1")
    assert child.TaskStatus is TaskStatus.ROLLED_BACK and "parent p6" in child.TaskMessage
    assert parent.TaskStatus is TaskStatus.ROLLED_BACK
    assert [s.State for s in parent.Steps] == [StepState.ROLLED_BACK, StepState.ROLLED_BACK, StepState.WAITING]
    assert rollback_violations(parent) == [] and rollback_violations(child) == []


def fan_out_sub_flow(max_parallel=None):
    """a, then a child task per host (its inputs: the host and its index), then z."""
    each = sub_flow_step("each", [make_step("x"), make_step("y")])
    each.ForEach, each.MaxParallel = "hosts", max_parallel
    each.FlowInputs = {"host": "item", "position": "item_index", "who": "name"}
    return [make_step("a"), each, make_step("z")]


def test_a_for_each_sub_flow_runs_a_child_per_item_and_gathers_their_outputs_in_order(sim):
    simulator = sim()
    simulator.submit(new(fan_out_sub_flow(max_parallel=2), {"name": "n1", "hosts": ["h0", "h1", "h2"]}, task_id="pf"))
    most_at_once = 0
    while simulator.pending():
        parent = simulator.store.get("pf")
        most_at_once = max(most_at_once, len([r for r in parent.Runs if r.State is RunState.WAITING_CHILD]))
        simulator.step(simulator.pending() - 1)  # the newest first: children interleave
    parent = simulator.store.get("pf")
    assert parent.TaskStatus is TaskStatus.SUCCESS and most_at_once == 2  # max_parallel holds for children
    children = [simulator.store.get(f"pf.1.{i}") for i in range(3)]
    assert [c.TaskStatus for c in children] == [TaskStatus.SUCCESS] * 3
    assert [(c.Parameters["host"], c.Parameters["position"], c.Parameters["who"]) for c in children] == [
        ("h0", 0, "n1"), ("h1", 1, "n1"), ("h2", 2, "n1")]
    assert [(c.Parent.Cursor, c.Parent.Item) for c in children] == [(1, 0), (1, 1), (1, 2)]
    assert parent.Parameters["each"] == [{"out_0": None, "out_1": None}] * 3  # each child's own output
    assert parent.Steps[1].ChildTaskId is None  # each item names its own child
    assert [i.ChildTaskId for i in parent.Steps[1].Items] == ["pf.1.0", "pf.1.1", "pf.1.2"]


def test_a_failing_item_child_rolls_the_parent_back_and_undoes_the_children_that_succeeded(sim):
    calls = []

    def second_childs_y_fails(task_type, cursor, item, phase):  # children run one at a time here
        if task_type == "child" and cursor == 1 and phase is N:
            calls.append(1)
            return len(calls) == 2
        return False

    simulator = sim(second_childs_y_fails)
    simulator.submit(new(fan_out_sub_flow(max_parallel=1), {"name": "n1", "hosts": ["h0", "h1", "h2"]}, task_id="pg"))
    run_all(simulator)
    parent = simulator.store.get("pg")
    first, second = simulator.store.get("pg.1.0"), simulator.store.get("pg.1.1")
    assert parent.TaskStatus is TaskStatus.ROLLED_BACK and "child task pg.1.1" in parent.TaskMessage
    assert first.TaskStatus is TaskStatus.ROLLED_BACK and "undone: parent pg" in first.TaskMessage  # it had succeeded
    assert second.TaskStatus is TaskStatus.ROLLED_BACK and simulator.store.get("pg.1.2") is None  # never started
    assert [i.State for i in parent.Steps[1].Items] == [StepState.ROLLED_BACK, StepState.ROLLED_BACK, StepState.WAITING]
    assert rollback_violations(parent) == [] and rollback_violations(first) == [] and rollback_violations(second) == []


def test_cancelling_a_parent_cancels_each_running_item_child(sim):
    from common.engine.operator.actions import cancel

    simulator = sim()
    simulator.submit(new(fan_out_sub_flow(), {"name": "n1", "hosts": ["h0", "h1"]}, task_id="ph"))
    while not (simulator.store.get("ph.1.0") and simulator.store.get("ph.1.1")):
        simulator.step(0)
    parent = mutate(simulator.store, "ph", lambda t: cancel(t, "op", "not needed", Timing(2000.0), ids=IDS))
    assert sorted(e.Body["TaskId"] for e in parent.Outbox if e.Kind == "cancel_child") == ["ph.1.0", "ph.1.1"]
    simulator.flush(parent)
    run_all(simulator)
    assert simulator.store.get("ph").TaskStatus is TaskStatus.ROLLED_BACK
    assert [simulator.store.get(f"ph.1.{i}").TaskStatus for i in range(2)] == [TaskStatus.ROLLED_BACK] * 2


def _parent_with_its_child_running(sim, task_id):
    """A parent whose sub-flow step's child has its first step claimed (and not finished)."""
    steps = [make_step("a"), sub_flow_step("sub", [make_step("x"), make_step("y")]), make_step("z")]
    simulator = sim()
    simulator.submit(new(steps, {"name": "n1"}, task_id=task_id))
    while simulator.store.get(f"{task_id}.1") is None or not simulator.claimed:
        simulator.step(0)
    return simulator


def test_pausing_a_parent_pauses_its_child_and_resuming_it_resumes_the_child(sim):
    from common.engine.operator.flow import pause, resume

    simulator = _parent_with_its_child_running(sim, "p8")
    parent = mutate(simulator.store, "p8", lambda t: pause(t, "op", "db patching", Timing(2000.0), ids=IDS))
    assert parent.Outbox[-1].Kind == "pause_child"
    simulator.flush(parent)
    run_all(simulator)  # the child's claimed step finishes; its next one must not start
    child = simulator.store.get("p8.1")
    assert child.Paused is not None and child.Paused.Actor == "parent p8" and "db patching" in child.Paused.Reason
    assert child.TaskStatus is TaskStatus.RUNNING and [s.State for s in child.Steps] == [StepState.SUCCEEDED, StepState.WAITING]
    parent = mutate(simulator.store, "p8", lambda t: resume(t, "op", "patched", Timing(3000.0), ids=IDS))
    assert parent.Outbox[-1].Kind == "resume_child"
    simulator.flush(parent)
    run_all(simulator)
    parent, child = simulator.store.get("p8"), simulator.store.get("p8.1")
    assert child.Paused is None and child.TaskStatus is TaskStatus.SUCCESS
    assert parent.TaskStatus is TaskStatus.SUCCESS


def test_a_parents_resume_leaves_a_child_an_operator_paused_by_itself(sim):
    from common.engine.operator.flow import pause, resume

    simulator = _parent_with_its_child_running(sim, "p9")
    mutate(simulator.store, "p9.1", lambda t: pause(t, "olga", "looking at it", Timing(1500.0), ids=IDS))
    parent = mutate(simulator.store, "p9", lambda t: pause(t, "op", "window", Timing(2000.0), ids=IDS))
    simulator.flush(parent)  # the child is paused already: the parent's pause is refused there
    parent = mutate(simulator.store, "p9", lambda t: resume(t, "op", "window over", Timing(3000.0), ids=IDS))
    simulator.flush(parent)
    run_all(simulator)
    child = simulator.store.get("p9.1")
    assert child.Paused is not None and child.Paused.Actor == "olga"
    assert simulator.store.get("p9").TaskStatus is TaskStatus.RUNNING


@pytest.mark.parametrize("action", ["pause", "cancel"])
def test_a_parents_pause_or_cancel_waits_in_its_outbox_until_the_child_exists(tmp_path, action):
    """Flushed before the parent's start_child (a relay's order after a crash), the entry must
    not be dropped as "no such task": the child would then run on, neither paused nor cancelled."""
    from common.relay.child_relay import ChildRelay
    from common.engine.operator.actions import cancel
    from common.engine.operator.flow import pause

    store = SqliteStore(tmp_path / "t.db")
    steps = [sub_flow_step("sub", [make_step("x")])]
    parent = new(steps, {"name": "n"}, task_id="p10")
    store.insert(parent)
    change = pause if action == "pause" else cancel
    acted = mutate(store, "p10", lambda t: change(t, "op", "window", Timing(2000.0), ids=IDS))
    relay = ChildRelay(store, lambda: Timing(2000.0), lambda task: None)
    entry = acted.Outbox[-1]
    assert entry.Kind == f"{action}_child"
    assert relay.apply("p10", entry) is False  # no child yet: the relay tries again later
    assert relay.apply("p10", acted.Outbox[0]) is True  # start_child
    assert relay.apply("p10", entry) is True
    child = store.get("p10.0")
    assert child.Paused is not None if action == "pause" else child.TaskStatus is TaskStatus.ROLLED_BACK


def test_retry_rollback_of_a_parent_retries_its_childs_failed_rollback(sim):
    from common.engine.operator.actions import retry_rollback

    broken = {"child": True}
    steps = [make_step("a"), sub_flow_step("sub", [make_step("x")]), make_step("z")]
    simulator = sim(lambda task_type, cursor, item, phase: (task_type == "t" and cursor == 2 and phase is N)
                    or (task_type == "child" and phase is R and broken["child"]))
    simulator.submit(new(steps, {"name": "n1"}, task_id="p7"))
    run_all(simulator)
    parent, child = simulator.store.get("p7"), simulator.store.get("p7.1")
    assert child.TaskStatus is TaskStatus.ROLLBACK_FAILED and parent.TaskStatus is TaskStatus.ROLLBACK_FAILED
    assert parent.Steps[1].State is StepState.ROLLBACK_FAILED and parent.Steps[0].State is StepState.SUCCEEDED
    broken["child"] = False  # the operator fixed what stopped the child's rollback
    again = mutate(simulator.store, "p7", lambda t: retry_rollback(t, "op", "fixed", Timing(3000.0), ids=IDS))
    assert again.Outbox[-1].Kind == "undo_child"
    simulator.flush(again)
    run_all(simulator)
    parent, child = simulator.store.get("p7"), simulator.store.get("p7.1")
    assert child.TaskStatus is TaskStatus.ROLLED_BACK and parent.TaskStatus is TaskStatus.ROLLED_BACK
    assert [s.State for s in parent.Steps] == [StepState.ROLLED_BACK] * 3


def test_a_sub_flows_child_notifies_its_parents_webhooks(sim):
    steps = [make_step("a"), sub_flow_step("sub", [make_step("x")]), make_step("z")]
    simulator = sim()
    parent = new(steps, {"name": "n1"}, task_id="p1")
    parent.Notify = [NotifyTarget(Url="http://hooks.example/")]
    add_notifications(None, parent)
    simulator.submit(parent)
    run_all(simulator)
    seen = {(w["TaskId"], w["Event"]) for w in simulator.webhooks}
    assert seen == {(task, event) for task in ("p1", "p1.1") for event in ("created", "started", "succeeded")}
    assert simulator.store.get("p1.1").Notify == parent.Notify


def test_an_empty_list_starts_no_child_and_a_rollback_passes_over_it(sim):
    """docs/guide/graphs.md: an empty list is nothing to do, for a for_each sub-flow step too."""
    simulator = sim(lambda task_type, cursor, item, phase: task_type == "t" and cursor == 2 and phase is N)
    simulator.submit(new(fan_out_sub_flow(), {"name": "n1", "hosts": []}, task_id="pe"))
    run_all(simulator)
    parent = simulator.store.get("pe")
    assert parent.TaskStatus is TaskStatus.ROLLED_BACK and simulator.store.get("pe.1") is None
    assert parent.Steps[1].Items == [] and parent.Steps[1].State is StepState.SKIPPED  # passed over
    assert [e for e in parent.History if e.Event == "dispatched" and e.Cursor == 1] == []


def test_a_parents_cancel_with_stop_running_lets_the_childs_claimed_step_finish(sim):
    """docs/guide/operator-actions.md: the child gets a plain cancel; stop_running stops the parent's own claimed steps."""
    from common.engine.operator.actions import cancel

    simulator = _parent_with_its_child_running(sim, "ps")
    parent = mutate(simulator.store, "ps", lambda t: cancel(t, "op", "not needed", Timing(2000.0), ids=IDS,
                                                            stop_running=True))
    simulator.flush(parent)
    while simulator.deliveries:  # apply the cancel_child entry; the child's claimed step stays claimed
        simulator.step(0)
    child = simulator.store.get("ps.1")
    assert child.CancelRequested.Actor == "parent ps" and child.CancelRequested.Reason == "op: not needed"
    assert [r.State for r in child.Runs] == [RunState.RUNNING]  # not stopped: it finishes
    run_all(simulator)
    assert simulator.store.get("ps.1").Steps[0].State is StepState.ROLLED_BACK  # it finished, then was undone
    assert simulator.store.get("ps").TaskStatus is TaskStatus.ROLLED_BACK
