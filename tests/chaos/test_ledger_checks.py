"""The ledger check (tests/chaos/ledger_checks.py) on documents the real pure transitions wrote and
ledgers made to match them: it passes a clean run and catches each broken promise."""

from __future__ import annotations

import pytest

from common.engine.states import TaskStatus
from tests.chaos.ledger_checks import check_ledger
from tests.chaos.hand_made import drive, fail_at, graph_rolled_back, graph_rollout, new_task, succeed

pytestmark = pytest.mark.usefixtures("inline_items")


def clean_ledger(task) -> list[dict]:
    """What the module's effects would be for this History: an apply per success committed and
    an undo per rollback committed, the undo later than the apply."""
    lines = []
    for index, e in enumerate(task.History):
        op = {"step_succeeded": "apply", "rollback_succeeded": "undo"}.get(e.Event)
        if op:
            lines.append({"op": op, "task": task.TaskId, "cursor": e.Cursor, "item": e.Item, "time": float(index),
                          "key": f"{task.TaskId}:{e.Cursor}.{e.Item}:{op}"})
    return lines


def violations(task, ledger) -> list[str]:
    return check_ledger([task], ledger).violations


def test_clean_runs_pass_and_are_counted():
    success, rolled = drive(new_task(), succeed), graph_rolled_back()
    assert (success.TaskStatus, rolled.TaskStatus) == (TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK)
    ledger = clean_ledger(success) + clean_ledger(rolled)
    ledger.append(dict(ledger[0], time=0.5))  # a second run of one apply (killed before its commit)
    report = check_ledger([success, rolled], ledger)
    assert report.violations == []
    # success: 3 steps; rolled back: the root, its 3 items and the join. Applied there: the root
    # and item 0; undone: those and item 1, which failed (it ran: it may have left debris).
    assert report.units == 3 + 5 and report.extra_applies == 1
    assert report.applied == 3 + 2 and report.undone == 3


def test_a_committed_item_never_undone_is_caught():
    task = graph_rolled_back()
    ledger = [n for n in clean_ledger(task) if not (n["op"] == "undo" and n["item"] == 0)]
    assert any("step 1 item 0: applied" in v and "0 undo effect(s)" in v for v in violations(task, ledger))


def test_an_effect_whose_rollback_was_not_committed_is_caught():
    task = graph_rolled_back()
    ledger = clean_ledger(task)
    task.History = [e for e in task.History if not (e.Event == "rollback_succeeded" and e.Item == 0)]
    assert any("step 1 item 0: applied" in v and "rollback committed 0 times" in v for v in violations(task, ledger))


def test_an_item_that_never_ran_applied_or_undone_is_caught():
    task = graph_rolled_back()
    extra = {"op": "undo", "task": task.TaskId, "cursor": 1, "item": 2, "time": 99.0}
    found = violations(task, [*clean_ledger(task), extra])
    assert any("step 1 item 2: 0 apply and 1 undo effect(s), never claimed" in v for v in found)


def test_an_apply_after_the_last_undo_is_caught():
    task = graph_rolled_back()
    ledger = clean_ledger(task)
    late = {"op": "apply", "task": task.TaskId, "cursor": 1, "item": 0, "time": 1000.0}
    assert any("step 1 item 0: an apply effect made after its last undo" in v for v in violations(task, [*ledger, late]))


def test_a_success_missing_an_effect_or_with_an_undo_is_caught():
    task = drive(new_task(), succeed)
    ledger = clean_ledger(task)
    missing = [n for n in ledger if n["cursor"] != 1]
    assert any("step 1: SUCCESS with the outcome committed 1 times, 0 effect(s)" in v for v in violations(task, missing))
    undo = {"op": "undo", "task": task.TaskId, "cursor": 2, "item": None, "time": 99.0}
    assert any("step 2: SUCCESS but undone" in v for v in violations(task, [*ledger, undo]))


def test_an_outcome_committed_twice_and_a_rollback_failed_are_caught():
    task = graph_rolled_back()
    twice = next(e for e in task.History if e.Event == "step_succeeded" and e.Item == 0)
    task.History.append(twice.model_copy())
    assert any("step 1 item 0: normal outcome committed 2 times" in v for v in violations(task, clean_ledger(task)))
    failed = drive(new_task(), fail_at(2, rollback_fails_at=1))
    assert failed.TaskStatus is TaskStatus.ROLLBACK_FAILED
    assert any("ended ROLLBACK_FAILED" in v for v in violations(failed, clean_ledger(failed)))


def test_effects_of_a_unit_the_task_does_not_have_are_caught():
    task = drive(new_task(), succeed)
    stray = {"op": "apply", "task": task.TaskId, "cursor": 1, "item": 7, "time": 1.0}
    assert any("effects of a unit the task does not have" in v for v in violations(task, [*clean_ledger(task), stray]))


def test_a_rollout_with_a_tolerated_item_and_a_redriven_one_passes():
    task = graph_rollout()
    report = check_ledger([task], clean_ledger(task))
    assert report.violations == [] and report.undone == 1  # the tolerated item's debris, once


def test_a_tolerated_item_left_with_its_debris_or_undone_twice_is_caught():
    task = graph_rollout()
    kept = [n for n in clean_ledger(task) if n["op"] != "undo"]
    assert any("step 1 item 1: tolerated" in v and "0 undo effect(s)" in v for v in violations(task, kept))
    twice = next(e for e in task.History if e.Event == "rollback_succeeded")
    task.History.append(twice.model_copy())
    assert any("step 1 item 1: tolerated" in v and "rollback committed 2 times" in v
               for v in violations(task, clean_ledger(task)))


def test_an_item_that_succeeded_applied_again_after_the_redrive_is_caught():
    task = graph_rollout()
    redriven = next(e.Time for e in task.History if e.Event == "redriven")
    again = {"op": "apply", "task": task.TaskId, "cursor": 1, "item": 0, "time": redriven + 0.5,
             "key": f"{task.TaskId}:1.0:apply"}
    assert any("step 1 item 0: applied again after a redrive" in v for v in violations(task, [*clean_ledger(task), again]))


def test_an_effect_made_under_a_second_idempotency_key_is_caught():
    task = graph_rollout()
    ledger = clean_ledger(task)
    other = dict(next(n for n in ledger if n["item"] == 2), key="another", time=0.5)
    assert any("step 1 item 2: apply made under 2 idempotency keys" in v for v in violations(task, [*ledger, other]))
