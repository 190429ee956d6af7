"""Checks of `freeze:` that the schema cannot express: each window names task types the file
defines, and no two windows share a name (the name is what a held task and a refusal show)."""

from __future__ import annotations

from typing import Any

from common.flows.messages import describe
from common.flows.problems import Path, Problem, at
from common.flows.yaml_source import Lines


def freeze_checks(data: dict[str, Any], lines: Lines) -> list[Problem]:
    windows = data.get("freeze")
    task_types = data.get("task_types")
    known = set(task_types) if isinstance(task_types, dict) else None
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, window in enumerate(windows if isinstance(windows, list) else []):
        if not isinstance(window, dict):
            continue  # the schema reports it
        base: Path = ("freeze", index)
        name = window.get("name")
        if isinstance(name, str):
            if name in seen:
                problems.append(at(lines.value(base + ("name",)), base + ("name",),
                                   f"another freeze window is named {describe(name)} already: names must differ"))  # fmt: skip
            seen.add(name)
        listed = window.get("task_types")
        for position, task_type in enumerate(listed if isinstance(listed, list) else []):
            if known is not None and isinstance(task_type, str) and task_type not in known:
                path = base + ("task_types", position)
                choices = ", ".join(sorted(known)) or "none"
                problems.append(at(lines.value(path), path,
                                   f"names unknown task type {describe(task_type)} (task types: {choices})"))  # fmt: skip
    return problems
