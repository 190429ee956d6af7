"""The fields of the step document a `for_each` step declares: the list it fans out over, its
limits, and its items: inline (`Items`), or in records of their own (docs/design/item-records.md)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from common.engine.core.declared import declared_parts
from common.engine.core.doc_base import Doc
from common.engine.core.unit_doc import UnitState
from common.engine.states import Phase
from common.engine.kinds.for_each.tolerance_doc import Tolerance

__all__ = ["ForEachFields", "ForEachTaskFields", "HeldUnit", "StepItem", "Tolerance"]


class StepItem(UnitState):
    """One item of a `for_each` step: its value (fixed when the step started), its own phase
    states, and its command's output."""

    Value: Any = None
    Output: dict[str, Any] = Field(default_factory=dict)
    ChildTaskId: str | None = None  # a for_each sub-flow step: this item's child task


def _unset(value: object) -> bool:
    return value is None


class ForEachOwnFields(Doc):
    ForEach: str | None = None  # the list parameter this step fans out over
    MaxParallel: int | None = None  # items running at once (None: all)
    MaxItems: int | None = None  # the longest list it fans out over (None: the input limits only)
    Items: list[StepItem] | None = None  # fixed when a for_each step starts (kept inline)
    # A for_each step whose items live in records of their own: how many, and whether any of them
    # still has work in the step's current direction.
    ItemStore: str | None = None  # "records"; None: inline in Items
    ItemCount: int | None = None
    ItemsOpen: bool = False
    # The outbox entry of the operator's latest retry-rollback or compensate of the step's items:
    # a repeat of that entry leaves alone what it did, and what began after it
    # (docs/design/item-records.md, "What still holds").
    ItemsReopen: str | None = None
    # Its failure budget (docs/design/item-records.md, "A failure budget"), and how many of its
    # items failed within it once it succeeded. Left out of the document when unset, so a release
    # that predates them reads what this one writes.
    Tolerate: Tolerance | None = Field(None, exclude_if=_unset)
    # What an item failing for good past the budget does: None (rollback: the task goes backward)
    # or "hold" (the task waits for an operator; docs/design/item-records.md, "Hold and redrive").
    OnFailure: str | None = Field(None, exclude_if=_unset)
    FailedItems: int | None = Field(None, exclude_if=_unset)
    # The items that took a place in the budget, in the order they took it: each place is taken
    # with one compare-and-set of the task, so items failing together are decided one at a time
    # and an item's failure is counted once, however often its decision is repeated.
    ToleratedItems: list[int] | None = Field(None, exclude_if=_unset)

    def module_of(self, item: int | None, phase: Phase) -> str:
        """The module a unit's run goes to (an extension's part may say otherwise: a source's page)."""
        return self.module(phase)  # type: ignore[attr-defined, no-any-return]  # the command part of the step

    def command_of(self, item: int | None, phase: Phase) -> str:
        """The command a unit's run runs."""
        return self.command(phase)  # type: ignore[attr-defined, no-any-return]


# Each extension's part of the step (`STEP_PART` in its `fields.py`: its waves, its source), its
# fields after the kind's own, in their folders' order.
EXTENSION_PARTS = declared_parts("common.engine.kinds.for_each", "STEP_PART")


class ForEachFields(*EXTENSION_PARTS, ForEachOwnFields):  # type: ignore[misc]
    # The fields of the kind and of its extensions that are state, not definition.
    STATE: ClassVar[frozenset[str]] = frozenset().union(*(getattr(part, "STATE", ()) for part in EXTENSION_PARTS))


class HeldUnit(Doc):
    """The unit whose failure holds the task (`on_failure: hold`), and why."""

    Cursor: int
    Item: int | None = None
    Message: str = ""
    Time: float


class ForEachTaskFields(Doc):
    """The kind's part of the task document: how many items of its for_each steps failed within
    their budgets, once it succeeded (None: none did); the failure that holds it for an operator
    (None: not held). Left out when None."""

    FailedItems: int | None = Field(None, exclude_if=_unset)
    Held: HeldUnit | None = Field(None, exclude_if=_unset)
