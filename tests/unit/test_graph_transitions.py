"""The engine on graphs (docs/design/graph-and-routing.md, "Routing" and docs/design/protocol.md,
"Transitions"): diamond, fan-out, failures while siblings run, a join racing two completions, and
rollback order checked against the graph. Sub-flows: test_sub_flow_transitions.py."""

from __future__ import annotations
import pytest

from common.engine.document import StepMessage
from common.engine.states import Phase, ResultCode, StepState, TaskStatus
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import AttemptResult, Refusal, Timing, claim, create_task, finish_attempt
from tests.support.builders import counter_ids, make_step
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
    # The loser re-reads and applies its change to the newer document (common.store.tasks.mutate).
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


@pytest.mark.usefixtures("inline_items")
def test_for_each_runs_one_unit_per_item_and_gathers_outputs_in_item_order():
    task = do(new(fan_out(), {"hosts": ["h0", "h1", "h2"]}), 0)
    assert runs(task) == [(1, 0, N), (1, 1, N), (1, 2, N)]
    assert [i.Value for i in task.Steps[1].Items] == ["h0", "h1", "h2"]
    for item in (2, 0, 1):  # finishing out of order
        task = do(task, 1, AttemptResult(ResultCode.OK, output={"host": f"h{item}"}), item=item)
    assert task.Parameters["each"] == [{"host": "h0"}, {"host": "h1"}, {"host": "h2"}]
    assert task.Steps[1].State is StepState.SUCCEEDED and runs(task) == [(2, None, N)]


@pytest.mark.usefixtures("inline_items")
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


@pytest.mark.usefixtures("inline_items")
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


@pytest.mark.usefixtures("inline_items")
def test_items_of_a_step_without_rollback_are_passed_over():
    task = do(new(fan_out(rollback=False), {"hosts": [1, 2]}), 0)
    task = do(do(task, 1, item=0), 1, item=1)
    task = do(task, 2, FAIL)
    task = do(task, 2, phase=R)
    assert [i.State for i in task.Steps[1].Items] == [StepState.SKIPPED] * 2 and runs(task) == [(0, None, R)]


def test_idempotency_keys_name_the_item():
    from common.engine.core.entries import idempotency_key

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
    from common.engine.operator.actions import compensate, retry_rollback

    task = do(do(do(new(diamond()), 0), 1), 2)
    task = do(do(task, 3, FAIL), 3, phase=R)
    task = do(do(task, 1, FAIL, phase=R), 2, FAIL, phase=R)
    assert task.TaskStatus is TaskStatus.ROLLBACK_FAILED
    again = retry_rollback(task, "op", "fixed", Timing(500.0), ids=counter_ids("rr"))
    assert runs(again) == [(1, None, R), (2, None, R)]
    fixed = compensate(task, "op", "by hand", Timing(500.0), ids=counter_ids("cp"))
    assert [s.State for s in fixed.Steps[1:3]] == [StepState.COMPENSATED] * 2 and runs(fixed) == [(0, None, R)]


def test_cancel_fences_pending_runs_and_lets_claimed_ones_finish():
    from common.engine.operator.actions import cancel

    task = do(new(diamond()), 0)
    task, b = start(task, 1)
    cancelled = cancel(task, "op", "wrong region", Timing(400.0), ids=counter_ids("c"))
    assert cancelled.TaskStatus is TaskStatus.ROLLING_BACK and cancelled.Steps[2].State is StepState.CANCELLED
    assert runs(cancelled) == [(1, None, N)]
    task = finish(cancelled, b)  # b finished under the cancel: rolled back
    assert runs(task) == [(1, None, R)]


def test_cancel_with_stop_running_stops_claimed_runs_at_once():
    from common.engine.operator.actions import cancel

    task = do(new(diamond()), 0)
    task, b = start(task, 1)
    task, c = start(task, 2)
    stopped = cancel(task, "op", "now", Timing(400.0), ids=counter_ids("c"), stop_running=True)
    assert [s.State for s in stopped.Steps[1:3]] == [StepState.ROLLING_BACK] * 2
    assert isinstance(finish_attempt(stopped, b.DispatchId, "w", OK, Timing(401.0)), Refusal)


# --- format 1 documents --------------------------------------------------------------------------


def test_a_format_1_document_with_active_and_no_after_loads_and_runs_on():
    from common.engine.document import Task

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
