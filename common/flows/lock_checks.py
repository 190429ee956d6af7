"""Checks of a task type's `lock:` that the schema cannot express: the key template parses, and
each `{name}` in it is a declared parameter, never a secret one (a task type that leaves `parameters:` out takes
any parameters, so its names are checked at submission instead)."""

from __future__ import annotations

from typing import Any

from common.flows.messages import describe
from common.flows.problems import Path, Problem, at
from common.flows.yaml_source import Lines
from common.locks import template_fields


def lock_checks(data: dict[str, Any], lines: Lines) -> list[Problem]:
    problems: list[Problem] = []
    task_types = data.get("task_types")
    for type_name, task_type in (task_types if isinstance(task_types, dict) else {}).items():
        lock = task_type.get("lock") if isinstance(task_type, dict) else None
        key = lock.get("key") if isinstance(lock, dict) else None
        if not isinstance(key, str):
            continue  # the schema reports a missing or mistyped key
        path: Path = ("task_types", type_name, "lock", "key")
        try:
            names = template_fields(key)
        except ValueError as error:
            problems.append(at(lines.value(path), path, f"not a key template: {error}"))
            continue
        declared = task_type.get("parameters")
        if not isinstance(declared, dict):
            continue
        for name in names:
            if name not in declared:
                known = ", ".join(sorted(declared)) or "none"
                message = f"names unknown parameter {describe(name)} (declared parameters: {known})"
                problems.append(at(lines.value(path), path, message))
            elif isinstance(declared[name], dict) and declared[name].get("secret") is True:
                message = f"names secret parameter {describe(name)}: a lock key is shown in the API and console"
                problems.append(at(lines.value(path), path, message))
    return problems
