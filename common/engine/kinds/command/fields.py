"""The fields of the step document a step that runs a command declares: its module's command for
each phase (normal, rollback), their limits and backoff, and how long it may check again."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from common.engine.core.declared import composed, declared_parts
from common.engine.core.doc_base import Doc
from common.engine.core.unit_doc import BackoffPolicy
from common.engine.states import Phase


class CommandOwnFields(Doc):
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


# Each extension's part of the step (`STEP_PART` in its `fields.py`: its callbacks' spent tokens),
# its fields after the kind's own, in their folders' order.
EXTENSION_PARTS = declared_parts("common.engine.kinds.command", "STEP_PART")


class CommandFields(*EXTENSION_PARTS, CommandOwnFields):  # type: ignore[misc]
    # The fields of the kind and of its extensions that are state, not definition.
    STATE: ClassVar[frozenset[str]] = frozenset().union(*(getattr(part, "STATE", ()) for part in EXTENSION_PARTS))


# Its extensions' part of a run (a callback's wait): common/engine/core/task_doc.py finds it here.
RUN_PART = composed("CommandRunFields", declared_parts("common.engine.kinds.command", "RUN_PART"))
