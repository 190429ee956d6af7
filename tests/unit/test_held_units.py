"""Units a gate holds after their dispatch (common/engine/core/held_view.py): a delayed start not
due yet and a drained module keep a unit's run from its claim, so the views show it `waiting`
(never `running`) and the task's `WaitingFor` names the gate; nothing of it is stored, so the
document a previous release reads is unchanged; an operator may skip such a unit."""

from __future__ import annotations

from common.engine.core.entries import Refusal, Timing, claim, create_task
from common.engine.gates.drain.changes import drain_hold
from common.engine.operator.flow import skip
from common.engine.states import RunState, StepState, TaskStatus
from common.engine.views import held_view
from common.secrets.task_views import masked_task_view
from tests.support.builders import counter_ids, make_step
from tests.unit.test_drain_gate import message_of, written

STEPS = [make_step("first"), make_step("second")]


def delayed(start_at: float = 500.0):
    return create_task(task_type="t", steps=list(STEPS), parameters={}, timing=Timing(100.0), ids=counter_ids("d"),
                       start_at=start_at)  # fmt: skip


def test_a_delayed_start_shows_its_first_step_waiting_for_its_start_until_it_is_due():
    task = delayed()
    assert task.Steps[0].State is StepState.RUNNING  # stored as before: a previous release reads it
    shown = masked_task_view(task, now=200.0)
    assert [s["State"] for s in shown["Steps"]] == ["waiting", "waiting"]
    assert shown["WaitingFor"] == {"Kind": "start_at", "Since": 100.0, "Until": 500.0, "Key": None, "TaskId": None,
                                   "RecheckAt": None}
    assert task.to_doc()["Steps"][0]["State"] == "running" and task.to_doc().get("WaitingFor") is None
    due = masked_task_view(task, now=500.0)  # published at its start: waiting for a worker
    assert due["Steps"][0]["State"] == "running" and due["WaitingFor"] is None


def test_a_drained_module_shows_its_held_step_waiting_for_the_drain():
    task = create_task(task_type="t", steps=list(STEPS), parameters={}, timing=Timing(100.0), ids=counter_ids())
    assert masked_task_view(task, now=101.0)["Steps"][0]["State"] == "running"  # dispatched, not held
    held = written(drain_hold(task, message_of(task), "mod", "alice", "deploy", Timing(101.0)))
    shown = masked_task_view(held, now=102.0)
    assert shown["Steps"][0]["State"] == "waiting"
    assert (shown["WaitingFor"]["Kind"], shown["WaitingFor"]["Key"]) == ("drain", "mod")
    view = held_view(held, 102.0)
    assert set(view.units) == {(0, None)} and view.steps == {0}


def test_a_held_step_is_skipped_and_the_next_one_is_held_by_the_same_gate():
    task = delayed()
    skipped = skip(task, "olga", "done by hand", Timing(200.0), counter_ids("s"), cursor=0)
    assert not isinstance(skipped, Refusal), skipped
    assert skipped.Steps[0].State is StepState.OPERATOR_SKIPPED and skipped.TaskStatus is TaskStatus.NOT_STARTED
    assert [r.Cursor for r in skipped.Runs] == [1] and skipped.Outbox[0].DueAt == 500.0  # still at its start
    assert masked_task_view(skipped, now=200.0)["Steps"][1]["State"] == "waiting"

    drained = create_task(task_type="t", steps=list(STEPS), parameters={}, timing=Timing(100.0), ids=counter_ids())
    message = message_of(drained)
    drained = written(drain_hold(drained, message, "mod", "alice", "deploy", Timing(101.0)))
    skipped = skip(drained, "olga", "module retired", Timing(102.0), counter_ids("s"), cursor=0)
    assert not isinstance(skipped, Refusal), skipped
    assert [(r.Cursor, r.State) for r in skipped.Runs] == [(1, RunState.PENDING)]
    assert isinstance(claim(skipped, message, "w", Timing(103.0)), Refusal)  # a late delivery: its dispatch is gone


def test_a_step_dispatched_to_a_worker_that_has_not_failed_is_still_not_skipped():
    task = create_task(task_type="t", steps=list(STEPS), parameters={}, timing=Timing(100.0), ids=counter_ids())
    refused = skip(task, "olga", "why not", Timing(101.0), counter_ids("s"), cursor=0)
    assert isinstance(refused, Refusal) and "held before its claim" in str(refused)
