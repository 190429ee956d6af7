"""A `for_each` step's items from a source (docs/design/item-sources.md): the source a step names
(definition) and how far its paging got (state). Both left out of the document while None."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from common.engine.core.doc_base import Doc
from common.engine.states import Phase

DEFAULT_PAGE_SIZE = 500
MAX_PAGE_SIZE = 5000


class ItemSource(Doc):
    """A module's command that returns the step's items a page at a time."""

    Module: str
    Command: str
    PageSize: int = Field(DEFAULT_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)


class SourcePaging(Doc):
    """How far the step's paging got: the next page to fetch and its cursor, the items stored."""

    Page: int = 0
    After: Any = None  # the cursor the next page is fetched with (None: the first page)
    Fetched: int = 0  # items stored so far: the next page's first item gets this index
    Total: int | None = None  # the count the source last reported
    Done: bool = False  # no page left to fetch
    Failed: str | None = None  # why a page failed for good: the step fails with it


def _unset(value: object) -> bool:
    return value is None


class SourceFields(Doc):
    """The step document's part of a source: its items from a module's command, a page at a time,
    instead of a list parameter, and how far the paging got. Left out when None."""

    STATE: ClassVar[frozenset[str]] = frozenset({"Paging"})

    Source: ItemSource | None = Field(None, exclude_if=_unset)
    Paging: SourcePaging | None = Field(None, exclude_if=_unset)

    def module_of(self, item: int | None, phase: Phase) -> str:
        """The module a unit's run goes to: the source's for a page (the step's own unit, forward)."""
        if self.Source is not None and item is None and phase is Phase.NORMAL:
            return self.Source.Module
        return super().module_of(item, phase)  # type: ignore[misc, no-any-return]

    def command_of(self, item: int | None, phase: Phase) -> str:
        """The command a unit's run runs: the source's for a page."""
        if self.Source is not None and item is None and phase is Phase.NORMAL:
            return self.Source.Command
        return super().command_of(item, phase)  # type: ignore[misc, no-any-return]


STEP_PART = SourceFields  # composed into the for_each kind's fields (for_each/fields.py)
