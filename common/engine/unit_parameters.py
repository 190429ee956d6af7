"""What a unit's command sees as its parameters: the task's, plus its item in a for_each step."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from common.logging import SECRET_KEY
from common.engine.document import Task


_INLINE = object()  # the item's value is read from the step's inline Items


def command_parameters(task: Task, cursor: int, item: int | None, value: Any = _INLINE) -> dict[str, Any]:
    """The task's Parameters; a for_each item's run also gets `item` (its value, fixed when the
    step started) and `item_index` (DESIGN.md sec. 3). `value`: the item's value from its record
    (a step over item records, DESIGN.md sec. 12); by default it is read from the step's Items."""
    parameters = dict(task.Parameters)
    if item is None:
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
