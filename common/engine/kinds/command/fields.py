"""The fields of the step document a step that runs a command declares: its module's command for
each phase (normal, rollback), their limits and backoff, and how long it may check again."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from common.engine.core.doc_base import Doc
from common.engine.core.unit_doc import BackoffPolicy
from common.engine.kinds.command.callback.fields import CallbackRunFields, SpentToken
from common.engine.states import Phase


class CommandFields(Doc):
    # Its callback tokens spent (docs/design/callbacks.md): state, not definition.
    STATE: ClassVar[frozenset[str]] = frozenset({"Callbacks"})

    # A sub-flow step runs no command of its own: its Normal* fields are None.
    NormalModule: str | None = None
    NormalCommand: str | None = None
    NormalTimeout: float = 60.0
    NormalRetry: int = 0
    NormalBackoff: BackoffPolicy = Field(default_factory=BackoffPolicy)
    RollbackModule: str | None = None  # None: this step declares no rollback
    RollbackCommand: str | None = None
    RollbackTimeout: float | None = None
    RollbackRetry: int | None = None
    RollbackBackoff: BackoffPolicy = Field(default_factory=BackoffPolicy)
    MaxWait: float | None = None  # seconds a phase may keep answering "check again" (None: no bound)
    # The callback tokens of its runs whose wait is over, and how it ended: a late or repeated
    # callback is told why it changes nothing. Left out while empty.
    Callbacks: list[SpentToken] = Field(default_factory=list, exclude_if=lambda spent: not spent)

    def module(self, phase: Phase) -> str:
        return self.NormalModule if phase is Phase.NORMAL else self.RollbackModule  # type: ignore[return-value]

    def command(self, phase: Phase) -> str:
        return self.NormalCommand if phase is Phase.NORMAL else self.RollbackCommand  # type: ignore[return-value]

    def timeout(self, phase: Phase) -> float:
        return self.NormalTimeout if phase is Phase.NORMAL else self.RollbackTimeout  # type: ignore[return-value]

    def retry(self, phase: Phase) -> int:
        return self.NormalRetry if phase is Phase.NORMAL else self.RollbackRetry  # type: ignore[return-value]

    def backoff(self, phase: Phase) -> BackoffPolicy:
        return self.NormalBackoff if phase is Phase.NORMAL else self.RollbackBackoff


RUN_PART = CallbackRunFields  # a run's callback wait (common/engine/core/task_doc.py finds it here)
