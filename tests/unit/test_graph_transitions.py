"""The engine on graphs (DESIGN.md sec. 4-6): diamond, fan-out, failures while siblings run, a
join racing two completions, sub-flows, and rollback order checked against the graph."""

from __future__ import annotations

import pytest

from common.models import ChildTemplate, NotifyTarget, StepMessage
from common.notifications import add_notifications
from common.statuses import Phase, ResultCode, RunState, StepState, TaskStatus
from common.store.mutate import mutate
from common.store.sqlite import SqliteStore
from common.transitions import AttemptResult, Refusal, Timing, claim, create_task, finish_attempt
from tests.support.builders import counter_ids, make_step
from tests.support.dag_sim import Simulator
from tests.support.graph_checks import join_violations, rollback_violations

N, R = Phase.NORMAL, Phase.ROLLBACK
OK = AttemptResult(ResultCode.OK)
FAIL = AttemptResult(ResultCode.FAILED, "boom")


IDS = counter_ids("u")  # one factory for the whole module: dispatch ids never repeat


def graph(*spec, **extra):
    """spec: (name, after-indices) pairs -> steps."""
    steps = []
    for name, after in spec:
        step = make_step(name)
        step.After = list(after)
        steps.append(step)
    return steps


def diamond():
    return graph(("a", []), ("b", [0]), ("c", [0]), ("d", [1, 2]))


def new(steps, parameters=None, task_id=None):
    return create_task(task_type="t", steps=steps, parameters=parameters or {}, timing=Timing(100.0),
                       ids=counter_ids(task_id or "id"), task_id=task_id)


def runs(task):
    return sorted((r.Cursor, r.Item, r.Phase) for r in task.Runs)


def message(task, cursor, item=None, phase=N):
    run = next(r for r in task.Runs if (r.Cursor, r.Item, r.Phase) == (cursor, item, phase))
    entry = next(e for e in task.Outbox if e.DispatchId == run.DispatchId)
    return StepMessage.model_validate(entry.Body)


def do(task, cursor, result=OK, item=None, phase=N, now=200.0):
    """Claim the unit's run and finish it with `result`."""
    msg = message(task, cursor, item, phase)
    claimed = claim(task, msg, "w", Timing(now))
    assert not isinstance(claimed, Refusal), claimed
    done = finish_attempt(claimed, msg.DispatchId, "w", result, Timing(now + 1), ids=IDS)
    assert not isinstance(done, Refusal), done
    return done


def start(task, cursor, item=None, phase=N):
    msg = message(task, cursor, item, phase)
    claimed = claim(task, msg, "w", Timing(150.0))
    assert not isinstance(claimed, Refusal), claimed
    return claimed, msg


def finish(task, msg, result=OK, now=300.0):
    done = finish_attempt(task, msg.DispatchId, "w", result, Timing(now), ids=IDS)
    assert not isinstance(done, Refusal), done
    return done


def states(task):
    return [s.State for s in task.Steps]


# --- diamond ------------------------------------------------------------------------------------


def test_diamond_runs_the_branches_together_and_the_join_after_both():
    task = new(diamond())
    assert runs(task) == [(0, None, N)]
    task = do(task, 0)
    assert runs(task) == [(1, None, N), (2, None, N)]  # both branches dispatched by one change
    task = do(task, 2)
    assert runs(task) == [(1, None, N)]  # the join waits for b
    task = do(task, 1)
    assert runs(task) == [(3, None, N)]
    task = do(task, 3)
    assert task.TaskStatus is TaskStatus.SUCCESS and task.Runs == [] and task.Outbox == []
    assert join_violations(task) == []


def test_diamond_failure_in_the_join_rolls_back_join_then_branches_together_then_root():
    task = do(do(do(new(diamond()), 0), 1), 2)
    task = do(task, 3, FAIL)
    assert task.TaskStatus is TaskStatus.ROLLING_BACK and runs(task) == [(3, None, R)]
    task = do(task, 3, phase=R)
    assert runs(task) == [(1, None, R), (2, None, R)]  # independent rollbacks in parallel
    task = do(task, 1, phase=R)
    assert runs(task) == [(2, None, R)]  # a waits for c's rollback too
    task = do(do(task, 2, phase=R), 0, phase=R)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK and states(task) == [StepState.ROLLED_BACK] * 4
    assert rollback_violations(task) == []


def test_failure_while_a_sibling_runs_waits_for_it_then_rolls_back_both():
    task = do(new(diamond()), 0)
    task, c = start(task, 2)  # c is claimed and running
    task = do(task, 1, FAIL)
    assert task.TaskStatus is TaskStatus.ROLLING_BACK
    assert runs(task) == [(2, None, N)]  # draining: no rollback starts while c runs
    task = finish(task, c, OK)  # c's success is recorded, and it gets rolled back
    assert task.Steps[2].State is StepState.ROLLING_BACK and runs(task) == [(1, None, R), (2, None, R)]
    task = do(do(do(task, 1, phase=R), 2, phase=R), 0, phase=R)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    assert task.Steps[3].State is StepState.WAITING  # never ran, never rolled back
    assert rollback_violations(task) == []


def test_failure_cancels_a_sibling_nobody_claimed_and_it_is_never_rolled_back():
    task = do(new(diamond()), 0)
    task = do(task, 1, FAIL)  # c is pending: cancelled at once
    assert task.Steps[2].State is StepState.CANCELLED and runs(task) == [(1, None, R)]
    stale = message(do(new(diamond()), 0), 2)  # a late delivery of c's dispatch
    assert isinstance(claim(task, stale, "w", Timing(400.0)), Refusal)
    task = do(do(task, 1, phase=R), 0, phase=R)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK and task.Steps[2].State is StepState.CANCELLED
    assert rollback_violations(task) == []


def test_a_failed_drained_sibling_gets_no_retry_and_is_rolled_back():
    steps = diamond()
    steps[2].NormalRetry = 3
    task = do(new(steps), 0)
    task, c = start(task, 2)
    task = do(task, 1, FAIL)
    task = finish(task, c, FAIL)
    assert task.Steps[2].State is StepState.ROLLING_BACK and task.Steps[2].Attempts == 1


# --- the join racing two completions ---------------------------------------------------------------


def test_two_branches_finishing_at_once_are_both_recorded_and_the_join_dispatched_once(tmp_path):
    store = SqliteStore(tmp_path / "t.db")
    task = do(new(diamond(), task_id="race"), 0)
    task, b = start(task, 1)
    task, c = start(task, 2)
    store.insert(task)
    read = store.get("race")  # both finishers read this same document
    first = finish(read, b, now=300.0)
    first.Version = read.Version + 1
    assert store.compare_and_set(first, read.Version)
    second = finish(read, c, now=300.0)  # decided on the stale read: the join is not ready there
    assert (3, None, N) not in runs(second)
    second.Version = read.Version + 1
    assert not store.compare_and_set(second, read.Version)  # the loser's write is refused
    # The loser re-reads and applies its change to the newer document (common.store.mutate).
    won = mutate(store, "race", lambda t: finish_attempt(t, c.DispatchId, "w", OK, Timing(301.0),
                                                          ids=counter_ids("again")))
    assert [s.State for s in won.Steps[:3]] == [StepState.SUCCEEDED] * 3
    assert runs(won) == [(3, None, N)]
    assert join_violations(won) == []
    assert [e.Event for e in won.History].count("step_succeeded") == 3
    store.close()


# --- for_each -------------------------------------------------------------------------------------


def fan_out(max_parallel=None, rollback=True):
    steps = graph(("a", []), ("each", [0]), ("join", [1]))
    steps[1].ForEach, steps[1].MaxParallel = "hosts", max_parallel
    if not rollback:
        steps[1].RollbackModule = steps[1].RollbackCommand = None
    return steps


def test_for_each_runs_one_unit_per_item_and_gathers_outputs_in_item_order():
    task = do(new(fan_out(), {"hosts": ["h0", "h1", "h2"]}), 0)
    assert runs(task) == [(1, 0, N), (1, 1, N), (1, 2, N)]
    assert [i.Value for i in task.Steps[1].Items] == ["h0", "h1", "h2"]
    for item in (2, 0, 1):  # finishing out of order
        task = do(task, 1, AttemptResult(ResultCode.OK, output={"host": f"h{item}"}), item=item)
    assert task.Parameters["each"] == [{"host": "h0"}, {"host": "h1"}, {"host": "h2"}]
    assert task.Steps[1].State is StepState.SUCCEEDED and runs(task) == [(2, None, N)]


def test_max_parallel_keeps_at_most_that_many_items_running():
    task = do(new(fan_out(max_parallel=2), {"hosts": list(range(5))}), 0)
    assert runs(task) == [(1, 0, N), (1, 1, N)]
    task = do(task, 1, item=1)
    assert runs(task) == [(1, 0, N), (1, 2, N)]


def test_zero_items_succeed_at_once_with_an_empty_list():
    task = do(new(fan_out(), {"hosts": []}), 0)
    assert task.Steps[1].State is StepState.SUCCEEDED and task.Parameters["each"] == []
    assert runs(task) == [(2, None, N)]


def test_a_for_each_parameter_that_is_not_a_list_fails_the_step():
    task = do(new(fan_out(), {"hosts": "h0"}), 0)
    assert task.Steps[1].Code is ResultCode.FAILED and "is not a list" in task.TaskMessage
    assert task.Steps[1].State is StepState.SKIPPED  # no item ran: nothing of it to undo
    assert runs(task) == [(0, None, R)]


def test_fan_out_failure_in_one_item_drains_the_others_and_rolls_back_each_applied_item():
    task = do(new(fan_out(max_parallel=3), {"hosts": list(range(4))}), 0)
    task, item0 = start(task, 1, 0)
    task = do(task, 1, item=2)
    task = do(task, 1, FAIL, item=1)  # item 3 (pending) is cancelled; item 0 drains
    items = task.Steps[1].Items
    assert task.TaskMessage == "step 1 (each) item 1 failed: boom"
    assert [i.State for i in items] == [StepState.RUNNING, StepState.FAILED, StepState.SUCCEEDED, StepState.CANCELLED]
    assert runs(task) == [(1, 0, N)]
    task = finish(task, item0)
    assert runs(task) == [(1, 0, R), (1, 1, R), (1, 2, R)]  # every applied item, in parallel
    for item in (0, 1, 2):
        task = do(task, 1, item=item, phase=R)
    task = do(task, 0, phase=R)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK and task.Steps[1].State is StepState.ROLLED_BACK
    assert task.Steps[1].Items[3].State is StepState.CANCELLED
    assert rollback_violations(task) == []


def test_items_of_a_step_without_rollback_are_passed_over():
    task = do(new(fan_out(rollback=False), {"hosts": [1, 2]}), 0)
    task = do(do(task, 1, item=0), 1, item=1)
    task = do(task, 2, FAIL)
    task = do(task, 2, phase=R)
    assert [i.State for i in task.Steps[1].Items] == [StepState.SKIPPED] * 2 and runs(task) == [(0, None, R)]


def test_idempotency_keys_name_the_item():
    from common.transitions import idempotency_key

    assert idempotency_key("t1", 2, N) == "t1:2:normal"
    assert idempotency_key("t1", 2, R, generation=1, item=3) == "t1:g1:2.3:rollback"


# --- rollback failures and operators on graphs ----------------------------------------------------


def test_a_failed_rollback_lets_running_rollbacks_finish_then_raises_one_alarm():
    task = do(do(do(new(diamond()), 0), 1), 2)
    task = do(do(task, 3, FAIL), 3, phase=R)
    task, c_undo = start(task, 2, phase=R)
    task = do(task, 1, FAIL, phase=R)
    assert task.TaskStatus is TaskStatus.ROLLING_BACK and runs(task) == [(2, None, R)]
    task = finish(task, c_undo)
    assert task.TaskStatus is TaskStatus.ROLLBACK_FAILED
    assert task.Steps[0].State is StepState.SUCCEEDED  # a is not rolled back past a failure
    (alarm,) = [e for e in task.Outbox if e.Queue == "baton.alarms"]
    assert alarm.Body["Cursor"] == 1


def test_compensate_and_retry_rollback_work_on_graphs():
    from common.operator_actions import compensate, retry_rollback

    task = do(do(do(new(diamond()), 0), 1), 2)
    task = do(do(task, 3, FAIL), 3, phase=R)
    task = do(do(task, 1, FAIL, phase=R), 2, FAIL, phase=R)
    assert task.TaskStatus is TaskStatus.ROLLBACK_FAILED
    again = retry_rollback(task, "op", "fixed", Timing(500.0), ids=counter_ids("rr"))
    assert runs(again) == [(1, None, R), (2, None, R)]
    fixed = compensate(task, "op", "by hand", Timing(500.0), ids=counter_ids("cp"))
    assert [s.State for s in fixed.Steps[1:3]] == [StepState.COMPENSATED] * 2 and runs(fixed) == [(0, None, R)]


def test_cancel_fences_pending_runs_and_lets_claimed_ones_finish():
    from common.operator_actions import cancel

    task = do(new(diamond()), 0)
    task, b = start(task, 1)
    cancelled = cancel(task, "op", "wrong region", Timing(400.0), ids=counter_ids("c"))
    assert cancelled.TaskStatus is TaskStatus.ROLLING_BACK and cancelled.Steps[2].State is StepState.CANCELLED
    assert runs(cancelled) == [(1, None, N)]
    task = finish(cancelled, b)  # b finished under the cancel: rolled back
    assert runs(task) == [(1, None, R)]


def test_cancel_with_stop_running_stops_claimed_runs_at_once():
    from common.operator_actions import cancel

    task = do(new(diamond()), 0)
    task, b = start(task, 1)
    task, c = start(task, 2)
    stopped = cancel(task, "op", "now", Timing(400.0), ids=counter_ids("c"), stop_running=True)
    assert [s.State for s in stopped.Steps[1:3]] == [StepState.ROLLING_BACK] * 2
    assert isinstance(finish_attempt(stopped, b.DispatchId, "w", OK, Timing(401.0)), Refusal)


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


def test_a_sub_flow_run_waits_for_its_child_and_is_never_claimed():
    steps = [sub_flow_step("sub", [make_step("x")])]
    task = new(steps, {"name": "n"}, task_id="p5")
    (run,) = task.Runs
    assert run.State is RunState.WAITING_CHILD and run.Deadline is None
    assert task.Outbox[0].Kind == "start_child" and task.Outbox[0].Body["TaskId"] == "p5.0"


# --- round 1's documents --------------------------------------------------------------------------


def test_a_round_1_document_with_active_and_no_after_loads_and_runs_on():
    from common.models import Task

    line = new([make_step("a"), make_step("b")])
    doc = line.to_doc()
    (run,) = doc.pop("Runs")
    for key in ("Item", "Redispatches"):
        run.pop(key)
    doc["Active"] = run
    for step in doc["Steps"]:
        for key in ("After", "ForEach", "MaxParallel", "Items", "Flow", "FlowInputs", "FlowTemplate", "ChildTaskId"):
            step.pop(key)
    for key in ("Parent", "SweepAt", "OutboxDue"):
        doc.pop(key)
    old = Task.from_doc(doc)
    assert [s.After for s in old.Steps] == [[], [0]] and runs(old) == [(0, None, N)]
    done = do(do(old, 0), 1)
    assert done.TaskStatus is TaskStatus.SUCCESS
    assert Task.from_doc({**doc, "Active": None}).Runs == []


def test_cancelling_a_parent_cancels_its_running_child_and_both_roll_back(sim):
    from common.operator_actions import cancel

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
    from common.operator_actions import cancel

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
    from common.operator_flow import pause, resume

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
    from common.operator_flow import pause, resume

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


def test_a_parents_pause_waits_in_its_outbox_until_the_child_exists(tmp_path):
    from common.child_relay import ChildRelay
    from common.operator_flow import pause

    store = SqliteStore(tmp_path / "t.db")
    steps = [sub_flow_step("sub", [make_step("x")])]
    parent = new(steps, {"name": "n"}, task_id="p10")
    store.insert(parent)
    paused = mutate(store, "p10", lambda t: pause(t, "op", "window", Timing(2000.0), ids=IDS))
    relay = ChildRelay(store, lambda: Timing(2000.0), lambda task: None)
    pause_entry = paused.Outbox[-1]
    assert pause_entry.Kind == "pause_child"
    assert relay.apply("p10", pause_entry) is False  # no child yet: the relay tries again later
    assert relay.apply("p10", paused.Outbox[0]) is True  # start_child
    assert relay.apply("p10", pause_entry) is True
    assert store.get("p10.0").Paused is not None


def test_retry_rollback_of_a_parent_retries_its_childs_failed_rollback(sim):
    from common.operator_actions import retry_rollback

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
