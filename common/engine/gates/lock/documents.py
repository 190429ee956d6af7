"""The lock parts of the task document (docs/design/locks.md): a lock as flows.yaml declares it, a
task's own lock, and a step lock one unit waits for or holds.

A lock in the `exclusive` mode (every lock of a flows.yaml without `lock_modes`) is written
without `Mode` and `Shares`, exactly as before modes existed: a stored task, a flow's content
hash and what a process that predates modes reads all stay as they were.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from common.engine.gates.lock.modes import EXCLUSIVE, exclusive_left_out
from common.engine.states import LockState


class _LockDoc(BaseModel):
    # As common.engine.document._Doc: a typo in a stored document is an error, not a default.
    model_config = ConfigDict(extra="forbid", validate_assignment=False, ser_json_inf_nan="constants")

    @model_serializer(mode="wrap")
    def _as_before_modes(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return exclusive_left_out(handler(self))


class LockTemplate(_LockDoc):
    """A lock as flows.yaml declares it: a key template over the parameters ("cluster:{cluster}"),
    how many tasks may hold one key at once, its mode and whom it shares with (None: exclusive)."""

    Key: str
    Limit: int = 1
    Mode: str | None = None
    Shares: list[str] | None = None


class TaskLock(_LockDoc):
    """The lock a task takes before its first step (common/engine/gates/lock/table.py): its rendered
    key, limit, mode and the modes it shares the key with (common/engine/gates/lock/modes.py), and
    where it stands: pending (asked for once an awaited task succeeded), waiting, held, kept (its
    rollback failed: held until an operator ends the task) or released."""

    Key: str
    Limit: int = 1
    Mode: str = EXCLUSIVE
    Shares: list[str] = Field(default_factory=lambda: [EXCLUSIVE])
    State: LockState = LockState.WAITING
    Since: float | None = None  # when it was taken


class UnitLock(_LockDoc):
    """A step lock one unit waits for or holds (common/engine/gates/lock/unit_locks.py); its mode is
    shown, and the step's LockTemplate says whom it shares the key with."""

    Cursor: int
    Item: int | None = None
    Key: str
    Mode: str = EXCLUSIVE
    State: LockState = LockState.WAITING  # waiting | held (UNIT_LOCK_TRANSITIONS)
    Since: float | None = None
