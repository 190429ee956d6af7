"""The rate documents (docs/design/rates.md): a rate as flows.yaml declares it, a task's own rate
in the task document, and a key's document in the rate table (its recent starts)."""

from __future__ import annotations

from pydantic import Field

from common.engine.core.doc_base import Doc
from common.engine.states import RateState


class RateTemplate(Doc):
    """A rate as flows.yaml declares it: a key template over the parameters, how many starts per
    window of `Per` seconds."""

    Key: str
    Limit: int
    Per: float


class TaskRate(Doc):
    """A task's rate: its rendered key, limit and window, where it stands, when its slot was taken
    (`Since`) and, while it waits, when the next slot frees as last seen (`NextAt`)."""

    Key: str
    Limit: int
    Per: float
    State: RateState = RateState.PENDING
    Since: float | None = None
    NextAt: float | None = None


class RateStart(Doc):
    Member: str  # "<TaskId>:g<Generation>"
    At: float


class KeyRate(Doc):
    """One key's document in the rate table: its recent starts, oldest first, never more than the
    limit within a window (common.engine.gates.rate.window)."""

    Key: str
    Limit: int = 1
    Per: float = 60.0
    Starts: list[RateStart] = Field(default_factory=list)
    Version: int = 0
