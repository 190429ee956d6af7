"""The routing table of DESIGN.md, branch by branch."""

import pytest

from common.routing import Finish, RunStep, route
from common.statuses import Phase, TaskStatus

N, R = Phase.NORMAL, Phase.ROLLBACK
ALL_ROLLBACKS = [True, True, True]


def test_success_normal_goes_to_next_normal_step():
    assert route(ALL_ROLLBACKS, 0, N, True) == RunStep(1, N)
    assert route(ALL_ROLLBACKS, 1, N, True) == RunStep(2, N)


def test_success_of_last_normal_step_finishes_the_task():
    assert route(ALL_ROLLBACKS, 2, N, True) == Finish(TaskStatus.SUCCESS)


def test_failure_normal_rolls_back_this_step_first():
    assert route(ALL_ROLLBACKS, 1, N, False) == RunStep(1, R)


def test_success_rollback_goes_to_previous_steps_rollback():
    assert route(ALL_ROLLBACKS, 2, R, True) == RunStep(1, R)
    assert route(ALL_ROLLBACKS, 1, R, True) == RunStep(0, R)


def test_success_rollback_of_step_0_ends_rolled_back():
    assert route(ALL_ROLLBACKS, 0, R, True) == Finish(TaskStatus.ROLLED_BACK)


def test_failure_rollback_raises_alarm_and_ends_rollback_failed():
    assert route(ALL_ROLLBACKS, 2, R, False) == Finish(TaskStatus.ROLLBACK_FAILED, alarm=True)


def test_rollback_failure_at_step_0():
    assert route(ALL_ROLLBACKS, 0, R, False) == Finish(TaskStatus.ROLLBACK_FAILED, alarm=True)


def test_one_step_flow():
    assert route([True], 0, N, True) == Finish(TaskStatus.SUCCESS)
    assert route([True], 0, N, False) == RunStep(0, R)
    assert route([True], 0, R, True) == Finish(TaskStatus.ROLLED_BACK)
    assert route([False], 0, N, False) == Finish(TaskStatus.ROLLED_BACK, passed_over=(0,))


def test_steps_without_rollback_are_passed_over():
    has_rollback = [True, False, True]
    # Step 2 failed: roll back 2, then skip 1, then roll back 0.
    assert route(has_rollback, 2, N, False) == RunStep(2, R)
    assert route(has_rollback, 2, R, True) == RunStep(0, R, passed_over=(1,))


def test_failed_step_without_rollback_passes_to_earlier_one():
    assert route([True, False], 1, N, False) == RunStep(0, R, passed_over=(1,))


def test_no_rollback_anywhere_ends_rolled_back_at_once():
    assert route([False, False, False], 2, N, False) == Finish(TaskStatus.ROLLED_BACK, passed_over=(2, 1, 0))


@pytest.mark.parametrize("cursor", [-1, 3])
def test_cursor_outside_the_flow_is_a_bug(cursor):
    with pytest.raises(ValueError):
        route(ALL_ROLLBACKS, cursor, N, True)
