"""A `for_each` step's items from a source (docs/design/item-sources.md): the source a step names
(definition) and how far its paging got (state). Both left out of the document while None."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from common.engine.core.doc_base import Doc

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
