"""A step's failure budget as the document keeps it: its own module, so the step's parts that
hold one (the step, each of its waves) import it without importing each other."""

from __future__ import annotations

from pydantic import Field

from common.engine.core.doc_base import Doc


class Tolerance(Doc):
    """A step's failure budget (`tolerate`): `Count` items, or `Percent` of the step's items
    (common.engine.kinds.for_each.budget)."""

    Count: int | None = Field(None, exclude_if=lambda value: value is None)
    Percent: float | None = Field(None, exclude_if=lambda value: value is None)
