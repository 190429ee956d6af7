"""The lock checker (tests/chaos/lock_checks.py) on documents made by the real pure transitions:
it passes holds taken in turn and catches each broken promise."""

from __future__ import annotations

import itertools

from common.engine.document import Task
from common.engine.gates.lock.changes import lock_granted
from common.engine.states import Phase, ResultCode, TaskStatus
from common.engine.core.entries import AttemptResult, Timing, claim, create_task, finish_attempt
from common.engine.core.units import step_message
from tests.chaos.lock_checks import lock_violations, most_at_once
from tests.support.builders import counter_ids, make_step

IDS = counter_ids("lc")
TASK_IDS = counter_ids("T")


def locked(limit: int, at: float) -> Task:
    return create_task(task_type="t", steps=[make_step("a"), make_step("b")], parameters={}, timing=Timing(at),
                       ids=IDS, lock=("pool:p", limit), task_id=TASK_IDS())


def held_from(task: Task, granted_at: float, fail: bool = False, rollback_fails: bool = False) -> Task:
    """Granted at `granted_at`, then every attempt one second after the one before."""
    task = lock_granted(task, "pool:p", Timing(granted_at), IDS)
    clock = itertools.count(granted_at + 1)
    while task.Runs:
        run = task.Runs[0]
        task = claim(task, step_message(task, run), "w", Timing(float(next(clock))))
        fails = (run.Phase is Phase.NORMAL and run.Cursor == 1 and fail) or (run.Phase is Phase.ROLLBACK and rollback_fails)
        result = AttemptResult(ResultCode.FAILED, "boom", retryable=False) if fails else AttemptResult(ResultCode.OK)
        task = finish_attempt(task, run.DispatchId, "w", result, Timing(float(next(clock))), IDS)
    return task


def test_holds_in_turn_and_a_kept_lock_pass() -> None:
    first = held_from(locked(1, 100.0), 101.0)  # holds 101..105
    second = held_from(locked(1, 100.0), 105.0, fail=True)  # granted as the first releases
    third = held_from(locked(1, 100.0), 120.0, fail=True, rollback_fails=True)
    assert [t.TaskStatus for t in (first, second, third)] == [
        TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK, TaskStatus.ROLLBACK_FAILED]
    assert third.Lock.State == "kept"
    assert lock_violations([first, second, third]) == []


def test_more_holders_than_the_limit_at_once_is_caught() -> None:
    tasks = [held_from(locked(2, 100.0), at) for at in (101.0, 102.0, 103.0)]
    assert lock_violations(tasks) == ["lock pool:p: 3 holders at 103.000, limit 2"]
    assert lock_violations(tasks[:2]) == []


def test_a_kept_lock_holds_the_key_for_ever() -> None:
    kept = held_from(locked(1, 100.0), 101.0, fail=True, rollback_fails=True)
    later = held_from(locked(1, 100.0), 500.0)
    assert lock_violations([kept, later]) == ["lock pool:p: 2 holders at 500.000, limit 1"]


def test_a_claim_before_the_grant_is_caught() -> None:
    task = held_from(locked(1, 100.0), 101.0)
    claimed = next(e for e in task.History if e.Event == "claimed")
    claimed.Time = 100.5
    [problem] = lock_violations([task])
    assert "1 claim(s) outside its hold of pool:p" in problem


def test_work_without_the_lock_is_caught() -> None:
    task = held_from(locked(1, 100.0), 101.0)
    task.History = [e for e in task.History if e.Event != "lock_taken"]
    [problem] = lock_violations([task])
    assert "claim(s) without ever taking lock pool:p" in problem


def test_a_lock_not_given_back_or_given_back_by_a_failed_rollback_is_caught() -> None:
    kept_wrongly = held_from(locked(1, 100.0), 101.0)
    kept_wrongly.Lock.State = "held"
    kept_wrongly.History = [e for e in kept_wrongly.History if e.Event != "lock_released"]
    assert "SUCCESS with its lock held (history: held), expected released" in lock_violations([kept_wrongly])[0]
    freed = held_from(locked(1, 100.0), 101.0, fail=True, rollback_fails=True)
    freed.Lock.State = "released"
    assert "ROLLBACK_FAILED with its lock released (history: kept), expected kept" in lock_violations([freed])[0]


def test_most_at_once_counts_touching_spans_apart() -> None:
    assert most_at_once([(0, 1), (1, 2), (2, 3)]) == (1, 0)
    assert most_at_once([(0, 5), (1, 2), (1.5, 9)]) == (3, 1.5)
