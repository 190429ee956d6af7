"""The state of one unit of a task (docs/design/task-document.md, "Units"): a plain step, or one item
of a `for_each` step; and a phase's backoff policy. The parts every step and item share."""

from __future__ import annotations

from common.engine.core.doc_base import Doc as _Doc
from common.engine.states import ResultCode, StepState


class BackoffPolicy(_Doc):
    """Delay before retry n (1-based): min(Max, Initial * Multiplier**(n-1)), +- Jitter fraction."""

    Initial: float = 1.0
    Max: float = 60.0
    Multiplier: float = 2.0
    Jitter: float = 0.2


class UnitState(_Doc):
    """The state of one unit (docs/design/task-document.md, "Units"): a plain step, or one item of a
    `for_each` step. The field names are the step's own, so code handling a unit needs not know
    which it is."""

    State: StepState = StepState.WAITING
    Code: ResultCode | None = None  # normal phase: how its last attempt ended
    Message: str = ""
    TimeStart: float | None = None
    TimeEnd: float | None = None
    Attempts: int = 0  # normal-phase attempts started
    RollbackCode: ResultCode | None = None
    RollbackMessage: str = ""
    RollbackTimeStart: float | None = None
    RollbackTimeEnd: float | None = None
    RollbackAttempts: int = 0
    # "Check again later" (docs/design/operations.md): the command's latest progress message, and
    # when the current phase first answered "not done yet" (None while it is not waiting).
    Progress: str = ""
    WaitingSince: float | None = None
    # Verifies of an unknown outcome that answered "unknown" in each phase (docs/design/runtime.md,
    # "Verifying an unknown outcome").
    Verifies: int = 0
    RollbackVerifies: int = 0
