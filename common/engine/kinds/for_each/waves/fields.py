"""The step document's part of waves (docs/design/waves.md, "The document"): the waves as built
from flows.yaml (`Waves`) and where the step is in them (`Wave`). Both are left out of the
document when unset, so a step without waves is stored as before."""

from __future__ import annotations

from pydantic import Field

from common.engine.core.doc_base import Doc
from common.engine.kinds.for_each.tolerance_doc import Tolerance


def _unset(value: object) -> bool:
    return value is None


class WaveCheck(Doc):
    """A health check after a wave: a module's command, run as a child task of its own that sees
    the wave's items and their results."""

    Module: str
    Command: str


class WaveSpecDoc(Doc):
    """One wave: its size (items, "P%" of the step's items, or "rest") and the gate after it."""

    Size: int | str
    Bake: float | None = Field(None, exclude_if=_unset)  # seconds to wait after it, holding no slot
    Pause: bool = Field(False, exclude_if=lambda value: not value)  # wait for an operator's continue
    PauseTimeout: float | None = Field(None, exclude_if=_unset)  # seconds a pause waits at most
    OnTimeout: str | None = Field(None, exclude_if=_unset)  # "continue" or "fail" (None: continue)
    Tolerate: Tolerance | None = Field(None, exclude_if=_unset)  # a budget for its own items
    Check: WaveCheck | None = Field(None, exclude_if=_unset)  # a health check after it (after its bake)


# Where a step's waves stand.
RUNNING, BAKING, CHECKING, PAUSED = "running", "baking", "checking", "paused"


class WaveState(Doc):
    """Fixed when the step opens (`Ends`) and moved by the wave changes (waves/gate.py)."""

    Ends: list[int]  # the item index where each wave ends (exclusive)
    Index: int = 0  # the wave whose items may start
    Phase: str = RUNNING  # running, baking (until Until) or paused (for continue, until Until)
    Until: float | None = Field(None, exclude_if=_unset)
    Tallies: list[list[int]] = Field(default_factory=list)  # [done, failed] per wave that ended
    Check: str | None = Field(None, exclude_if=_unset)  # checking: the child task that runs the check


class WavesFields(Doc):
    """The step document's part of waves: as built from flows.yaml, and where the step stands in
    them once it opened. Left out when unset: a step without waves is stored as before."""

    Waves: list[WaveSpecDoc] | None = Field(None, exclude_if=_unset)
    Wave: WaveState | None = Field(None, exclude_if=_unset)


STEP_PART = WavesFields  # composed into the for_each kind's fields (for_each/fields.py)
