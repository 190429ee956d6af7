"""A for_each or sub-flow step's own outcome (docs/design/task-document.md, "Units"): a step that
ran items or a child shows when it started and ended, how it ended, how many attempts it took, and
its rollback, as a plain step does. The pure derivation (common/engine/core/step_summary.py), then whole
flows run by the real transitions on a real SQLite store (tests/support/dag_sim)."""

from __future__ import annotations

import pytest

from common.engine.core import step_summary
from common.engine.document import StepItem
from common.engine.states import ResultCode, StepState, TaskStatus
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import Timing, create_task
from tests.support.builders import counter_ids, make_step
from tests.support.dag_sim import Simulator
from tests.unit.test_graph_transitions import N, fan_out, new
from tests.unit.test_sub_flow_transitions import fan_out_sub_flow, sub_flow_step

S = StepState
OUTCOME_FIELDS = ("Code", "Message", "TimeStart", "TimeEnd", "Attempts",
                  "RollbackCode", "RollbackMessage", "RollbackTimeStart", "RollbackTimeEnd", "RollbackAttempts")


def item(state, start=None, end=None, code=None, attempts=0, message="", rb_start=None, rb_end=None,
         rb_code=None, rb_attempts=0, rb_message=""):
    return StepItem(State=state, TimeStart=start, TimeEnd=end, Code=code, Attempts=attempts, Message=message,
                    RollbackTimeStart=rb_start, RollbackTimeEnd=rb_end, RollbackCode=rb_code,
                    RollbackAttempts=rb_attempts, RollbackMessage=rb_message)


def test_while_items_run_the_step_has_started_and_not_ended():
    step = make_step("each")
    step.TimeStart = 5.0  # when it opened
    items = [item(S.SUCCEEDED, 10, 12, ResultCode.OK, 1), item(S.RUNNING, 11, None, None, 2), item(S.WAITING)]
    out = step_summary.outcome(step, items)
    assert (out.TimeStart, out.TimeEnd, out.Code, out.Attempts) == (10, None, None, 3)
    assert (out.RollbackTimeStart, out.RollbackTimeEnd, out.RollbackCode) == (None, None, None)


def test_every_item_done_is_a_step_that_succeeded_at_the_last_items_end():
    items = [item(S.SUCCEEDED, 10, 14, ResultCode.OK, 1), item(S.OPERATOR_SKIPPED, 11, 12, ResultCode.FAILED, 3),
             item(S.SUCCEEDED, 12, 13, ResultCode.OK, 2)]
    out = step_summary.outcome(make_step("each"), items)
    assert (out.Code, out.Message, out.TimeStart, out.TimeEnd, out.Attempts) == (ResultCode.OK, "", 10, 14, 6)


def test_the_first_item_to_fail_gives_the_steps_code_and_message():
    items = [item(S.ROLLED_BACK, 10, 20, ResultCode.FAILED, 1, "late", 30, 31, ResultCode.OK, 1),
             item(S.ROLLED_BACK, 10, 15, ResultCode.TIMED_OUT, 2, "first", 32, 33, ResultCode.OK, 1),
             item(S.CANCELLED)]
    out = step_summary.outcome(make_step("each"), items)
    assert (out.Code, out.Message) == (ResultCode.TIMED_OUT, "item 1: first")
    assert (out.TimeEnd, out.Attempts) == (20, 3)
    assert (out.RollbackCode, out.RollbackTimeStart, out.RollbackTimeEnd, out.RollbackAttempts) == (ResultCode.OK, 30, 33, 2)


def test_a_rollback_still_running_has_no_end_and_a_failed_one_names_its_item():
    running = [item(S.ROLLED_BACK, 1, 2, ResultCode.FAILED, 1, "x", 3, 4, ResultCode.OK, 1),
               item(S.ROLLING_BACK, 1, 2, ResultCode.OK, 1, "", 3, None)]
    out = step_summary.outcome(make_step("each"), running)
    assert (out.RollbackTimeStart, out.RollbackTimeEnd, out.RollbackCode) == (3, None, None)
    failed = [item(S.ROLLBACK_FAILED, 1, 2, ResultCode.FAILED, 1, "x", 3, 4, ResultCode.FAILED, 2, "undo broke"),
              item(S.SUCCEEDED, 1, 2, ResultCode.OK, 1)]  # left applied: a failed rollback stops the rest
    out = step_summary.outcome(make_step("each"), failed)
    assert (out.RollbackCode, out.RollbackMessage, out.RollbackTimeEnd) == (ResultCode.FAILED, "item 0: undo broke", 4)


def test_a_step_without_items_keeps_its_own_outcome():
    step = make_step("each")
    step.Code, step.Message, step.TimeStart, step.TimeEnd = ResultCode.FAILED, "not a list", 1.0, 1.0
    out = step_summary.outcome(step, [])
    assert tuple(getattr(out, f) for f in OUTCOME_FIELDS) == tuple(getattr(step, f) for f in OUTCOME_FIELDS)


@pytest.fixture
def sim(tmp_path):
    store = SqliteStore(tmp_path / "sim.db")
    yield lambda fails=lambda *a: False: Simulator(store, fails)
    store.close()


@pytest.mark.usefixtures("inline_items")
def test_a_rolled_back_twenty_item_step_shows_its_outcome_in_the_stored_document(sim):
    """Item 5 fails; every item that ran is undone: the step says when it ran, how it failed, and
    its rollback, in the document every reader gets."""
    simulator = sim(lambda task_type, cursor, item, phase: cursor == 1 and item == 5 and phase is N)
    simulator.submit(new(fan_out(max_parallel=4), {"hosts": [f"h{i}" for i in range(20)]}, task_id="f20"))
    simulator.run(lambda n: 0)
    task = simulator.store.get("f20")
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    items = task.Steps[1].Items
    shown = task.to_doc()["Steps"][1]
    ran = [i for i in items if i.Attempts]
    assert shown["State"] == "rolled_back"
    assert shown["Code"] == ResultCode.FAILED and shown["Message"] == "item 5: planned failure"
    assert shown["TimeStart"] == min(i.TimeStart for i in ran) and shown["TimeEnd"] == max(i.TimeEnd for i in ran)
    assert shown["Attempts"] == len(ran) and shown["RollbackAttempts"] == len(ran) > 1
    assert shown["RollbackTimeStart"] == min(i.RollbackTimeStart for i in ran)
    assert shown["RollbackTimeEnd"] == max(i.RollbackTimeEnd for i in ran) >= shown["RollbackTimeStart"]
    assert shown["RollbackCode"] == ResultCode.OK
    # The store's own copy holds it too (written by to_json), not only a view of it.
    raw = simulator.store.get("f20").Steps[1]
    assert (raw.Code, raw.RollbackCode, raw.Attempts) == (ResultCode.FAILED, ResultCode.OK, len(ran))


def test_a_sub_flow_step_that_ran_has_its_start_attempts_and_end(sim):
    steps = [sub_flow_step("sub", [make_step("x")]), make_step("z")]
    simulator = sim(lambda task_type, cursor, item, phase: task_type == "t" and cursor == 1 and phase is N)
    parent = new(steps, {"name": "n1"}, task_id="sf")
    # Asking for the child starts the parent: it runs while the child does.
    assert parent.TaskStatus is TaskStatus.RUNNING and parent.TimeStart is not None
    assert (parent.Steps[0].Attempts, parent.Steps[0].TimeStart) == (1, parent.TimeStart)
    simulator.submit(parent)
    simulator.run(lambda n: 0)
    parent = simulator.store.get("sf")
    step = parent.Steps[0]
    assert parent.TaskStatus is TaskStatus.ROLLED_BACK and step.State is StepState.ROLLED_BACK
    assert step.Attempts == 1 and step.Code is ResultCode.OK and step.TimeStart <= step.TimeEnd
    assert step.RollbackAttempts == 1 and step.RollbackCode is ResultCode.OK
    assert step.TimeEnd <= step.RollbackTimeStart <= step.RollbackTimeEnd


def test_a_sub_flow_step_whose_child_failed_shows_its_rollback_done(sim):
    steps = [make_step("a"), sub_flow_step("sub", [make_step("x")])]
    simulator = sim(lambda task_type, cursor, item, phase: task_type == "child" and phase is N)
    simulator.submit(new(steps, {"name": "n1"}, task_id="sg"))
    simulator.run(lambda n: 0)
    step = simulator.store.get("sg").Steps[1]
    assert (step.Attempts, step.Code) == (1, ResultCode.FAILED) and step.TimeStart <= step.TimeEnd
    assert step.RollbackCode is ResultCode.OK and step.RollbackTimeStart == step.RollbackTimeEnd == step.TimeEnd
    assert "rolled itself back" in step.RollbackMessage


def test_items_of_a_for_each_sub_flow_and_their_step_show_their_children_ran(sim):
    simulator = sim()
    simulator.submit(new(fan_out_sub_flow(max_parallel=2), {"name": "n1", "hosts": ["h0", "h1", "h2"]}, task_id="sh"))
    simulator.run(lambda n: 0)
    step = simulator.store.get("sh").Steps[1]
    assert [(i.Attempts, i.Code) for i in step.Items] == [(1, ResultCode.OK)] * 3
    assert all(i.TimeStart <= i.TimeEnd for i in step.Items)
    assert (step.Attempts, step.Code, step.TimeStart) == (3, ResultCode.OK, min(i.TimeStart for i in step.Items))


def test_a_sub_flow_root_of_a_delayed_task_starts_when_its_child_is_due(sim):
    steps = [sub_flow_step("sub", [make_step("x")])]
    task = create_task(task_type="t", steps=steps, parameters={"name": "n"}, timing=Timing(100.0), start_at=500.0,
                       ids=counter_ids("d"), task_id="dl")
    assert task.TaskStatus is TaskStatus.NOT_STARTED and task.TimeStart is None  # nothing runs before 500
    assert (task.Steps[0].Attempts, task.Steps[0].TimeStart) == (0, None)
    simulator = sim()
    simulator.submit(task)  # the simulator's clock is past 500: the child is created and runs
    simulator.run(lambda n: 0)
    task = simulator.store.get("dl")
    assert task.TaskStatus is TaskStatus.SUCCESS and task.TimeStart == 500.0
    assert (task.Steps[0].Attempts, task.Steps[0].TimeStart, task.Steps[0].Code) == (1, 500.0, ResultCode.OK)


@pytest.mark.usefixtures("inline_items")
def test_baton_get_shows_the_steps_outcome_for_a_document_stored_without_it(sim):
    from common.secrets.task_views import masked_task
    from common.engine.document import Task
    from oss.cli.render import task_summary

    simulator = sim(lambda task_type, cursor, item, phase: cursor == 1 and item == 5 and phase is N)
    simulator.submit(new(fan_out(max_parallel=4), {"hosts": [f"h{i}" for i in range(20)]}, task_id="cli20"))
    simulator.run(lambda n: 0)
    doc = simulator.store.get("cli20").to_doc()
    ran = sum(1 for i in doc["Steps"][1]["Items"] if i["Attempts"])
    doc["Steps"][1].update(Code=None, Message="", TimeStart=None, TimeEnd=None, Attempts=0)  # as written before
    line = next(x for x in task_summary(masked_task(Task.from_doc(doc))).splitlines() if x.startswith("  [1] "))
    assert line.startswith("  [1] each") and f"attempts {ran}  " in line and "  -  " not in line
    assert "item 5: planned failure" in line
