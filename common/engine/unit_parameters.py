"""What a unit's command sees as its parameters: the task's, plus its item in a for_each step."""

from __future__ import annotations

from typing import Any

from common.engine.document import Task


def command_parameters(task: Task, cursor: int, item: int | None) -> dict[str, Any]:
    """The task's Parameters; a for_each item's run also gets `item` (its value, fixed when the
    step started) and `item_index` (DESIGN.md sec. 3)."""
    parameters = dict(task.Parameters)
    items = task.Steps[cursor].Items
    if item is not None and items is not None and 0 <= item < len(items):
        parameters["item"] = items[item].Value
        parameters["item_index"] = item
    return parameters
