"""The fields the lock gates keep (docs/design/locks.md): the task's own lock and the step locks its
units wait for or hold, in the task document (`TASK_PART`), and a step's declared lock in the step
document (`STEP_PART`; each unit's normal phase holds its key, common/engine/gates/lock/unit_locks.py).
Both are parts stored documents held from the first, so each declares its place among them."""

from __future__ import annotations

from pydantic import Field

from common.engine.core.doc_base import Doc
from common.engine.gates.lock.documents import LockTemplate, TaskLock, UnitLock


class LockFields(Doc):
    Lock: TaskLock | None = None  # its task type declares a lock


class UnitLocksFields(Doc):
    UnitLocks: list[UnitLock] = Field(default_factory=list)  # step locks waited for or held


class LockTaskFields(UnitLocksFields, LockFields):
    """`Lock`, then `UnitLocks`: the order stored task documents hold them in."""


class StepLockFields(Doc):
    Lock: LockTemplate | None = None


TASK_PART = LockTaskFields
TASK_PART_PLACE = 6  # after the first five parts common.engine.core.task_doc lists (the pause's last)
STEP_PART = StepLockFields
STEP_PART_PLACE = 0  # before the parts of the first kinds common.engine.core.step_doc lists
