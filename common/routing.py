"""The routing rule of DESIGN.md as one pure function: what comes after a step run ends.

| outcome | phase    | next                                                                    |
|---------|----------|-------------------------------------------------------------------------|
| success | normal   | next normal step; after the last one the task succeeds                  |
| success | rollback | rollback of the previous step; after step 0 the task is rolled back     |
| failure | normal   | rollback of THIS step (it may have left debris); task rolls back        |
| failure | rollback | system alarm; the task ends rollback-failed                             |

A step that declares no rollback is passed over while rolling back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from common.statuses import Phase, TaskStatus


@dataclass(frozen=True)
class RunStep:
    cursor: int
    phase: Phase
    passed_over: tuple[int, ...] = ()  # steps with no rollback skipped on the way to this one


@dataclass(frozen=True)
class Finish:
    status: TaskStatus
    passed_over: tuple[int, ...] = ()
    alarm: bool = False  # raise a system alarm (a rollback failed)


Route = RunStep | Finish


def route(has_rollback: Sequence[bool], cursor: int, phase: Phase, succeeded: bool) -> Route:
    """Decide the next move of a task whose step `cursor` just ended its `phase` run."""
    if not 0 <= cursor < len(has_rollback):
        raise ValueError(f"cursor {cursor} outside a flow of {len(has_rollback)} steps")
    if phase is Phase.NORMAL and succeeded:
        if cursor + 1 < len(has_rollback):
            return RunStep(cursor + 1, Phase.NORMAL)
        return Finish(TaskStatus.SUCCESS)
    if phase is Phase.ROLLBACK and not succeeded:
        return Finish(TaskStatus.ROLLBACK_FAILED, alarm=True)
    # Rolling back: a failed normal step starts with itself, a finished rollback with the one before.
    first = cursor if phase is Phase.NORMAL else cursor - 1
    return _first_rollback_from(has_rollback, first)


def rollback_from(has_rollback: Sequence[bool], start: int) -> Route:
    """Roll back step `start` and every earlier one (start -1: nothing ran, the task is over).

    For operator actions that enter rollback between steps (a cancelled dispatch, a rollback
    step compensated by hand), where no step run just ended.
    """
    if not -1 <= start < len(has_rollback):
        raise ValueError(f"step {start} outside a flow of {len(has_rollback)} steps")
    return _first_rollback_from(has_rollback, start)


def _first_rollback_from(has_rollback: Sequence[bool], start: int) -> Route:
    passed_over: list[int] = []
    for index in range(start, -1, -1):
        if has_rollback[index]:
            return RunStep(index, Phase.ROLLBACK, tuple(passed_over))
        passed_over.append(index)
    return Finish(TaskStatus.ROLLED_BACK, tuple(passed_over))
