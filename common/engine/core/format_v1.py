"""Task documents of format 1 (the first stored shape), brought to the current shape as plain data before validation.

Format 1 stored one run as `Active`; today's documents hold a list, `Runs`. Such a document is
rare (it is rewritten in the new shape by its next transition), so it takes a slower path: the
readers try the document as it is first (Task.from_json, Task.from_doc).
"""

from __future__ import annotations

from typing import Any


def is_format_1(data: Any) -> bool:
    return isinstance(data, dict) and "Active" in data


def upgraded(data: dict[str, Any]) -> dict[str, Any]:
    """The document with its `Active` run as `Runs`; anything else is left to validation."""
    data = dict(data)
    active = data.pop("Active")
    data.setdefault("Runs", [active] if active is not None else [])
    return data
