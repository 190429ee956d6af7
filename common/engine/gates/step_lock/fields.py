"""The fields a step lock keeps: the step's declared lock (each unit's normal phase holds its key,
common/engine/gates/step_lock/unit_locks.py), and the task's list of the step locks its units
wait for or hold."""

from __future__ import annotations

from pydantic import Field

from common.engine.core.doc_base import Doc
from common.engine.gates.lock.documents import LockTemplate, UnitLock


class StepLockFields(Doc):
    Lock: LockTemplate | None = None


class UnitLocksFields(Doc):
    UnitLocks: list[UnitLock] = Field(default_factory=list)  # step locks waited for or held
