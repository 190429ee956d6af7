"""A step's settle refused because its items do not add up (common.engine.kinds.for_each.records):
the relay acts on that refusal (it logs an inconsistency of its looks), so the refusal carries a
code the relay matches, whatever its reason's words."""

from __future__ import annotations

from common.engine.core.entries import Refusal, Timing, create_task
from common.engine.kinds.for_each.records import RECORDS, UNACCOUNTED, SettleRefusal, settle
from common.engine.states import StepState, TaskStatus
from tests.support.builders import counter_ids, make_step

NOW = 1000.0


def _running_step(items=4):
    step = make_step("each")
    step.ForEach, step.After = "hosts", []
    task = create_task(task_type="t", steps=[step], parameters={"hosts": list(range(items))}, timing=Timing(NOW),
                       task_id="t1", ids=counter_ids("t1"))
    task.TaskStatus = TaskStatus.RUNNING
    step = task.Steps[0]
    step.State, step.ItemStore, step.ItemsOpen, step.ItemCount = StepState.RUNNING, RECORDS, True, items
    return task


def _settle(task, counts):
    return settle(task, 0, counts, Timing(NOW + 1), "relay", lambda: [], None)


def test_a_settle_whose_items_do_not_add_up_is_refused_with_its_code():
    refused = _settle(_running_step(), {StepState.SUCCEEDED: 3, StepState.ROLLING_BACK: 1})
    assert isinstance(refused, Refusal) and refused.code is UNACCOUNTED is SettleRefusal.UNACCOUNTED
    assert "(4): 1 rolling_back, 3 succeeded" in refused.reason, refused.reason


def test_other_refusals_of_a_settle_carry_no_code():
    task = _running_step()
    task.Steps[0].ItemsOpen = False
    refused = _settle(task, {StepState.SUCCEEDED: 4})
    assert isinstance(refused, Refusal) and refused.code is None, refused


def test_a_settle_whose_items_add_up_concludes():
    settled = _settle(_running_step(), {StepState.SUCCEEDED: 4})
    assert not isinstance(settled, Refusal) and settled.Steps[0].State is StepState.SUCCEEDED
