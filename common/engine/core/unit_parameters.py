"""What a unit's command sees as its parameters: the task's, plus its item in a for_each step."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from common.secrets.names import SECRET_KEY
from common.engine.document import Task


_INLINE = object()  # the item's value is read from the step's inline Items


def command_parameters(task: Task, cursor: int, item: int | None, value: Any = _INLINE) -> dict[str, Any]:
    """The task's Parameters; a for_each item's run also gets `item` (its value, fixed when the
    step started) and `item_index` (docs/design/graph-and-routing.md, "The flow graph"). `value`:
    the item's value from its record (a step over item records, docs/design/item-records.md); by
    default it is read from the step's Items."""
    parameters = dict(task.Parameters)
    if item is None:
        step = task.Steps[cursor] if 0 <= cursor < len(task.Steps) else None
        if step is not None and step.Source is not None:  # a page of its source (docs/design/item-sources.md)
            paging = step.Paging
            parameters["page_after"] = paging.After if paging is not None else None
            parameters["page_size"] = step.Source.PageSize
        return parameters
    if value is not _INLINE:
        parameters["item"], parameters["item_index"] = value, item
        return parameters
    items = task.Steps[cursor].Items
    if items is not None and 0 <= item < len(items):
        parameters["item"] = items[item].Value
        parameters["item_index"] = item
    return parameters


def unit_secrets(secret_parameters: Collection[str], for_each: str | None) -> set[str]:
    """The names a unit's parameters keep hidden besides the secret-looking ones: the task's
    secret parameters, and `item` when the step fans out over a secret (or secret-looking) list."""
    names = set(secret_parameters)
    if for_each is not None and (for_each in names or SECRET_KEY.search(for_each)):
        names.add("item")
    return names
