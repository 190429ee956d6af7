"""Checks of `lock:` (on a task type, or on a step) that the schema cannot express: the key
template parses, and each `{name}` in it is a declared parameter, never a secret one: neither
declared `secret: true` nor named like one (password, token, ...: masked wherever a task is
shown), in a type that declares its parameters or one that leaves `parameters:` out (whose other
names are checked at submission). A step's key may also name `item` and `item_index` on a
`for_each` step, but not `item` when the list is secret; a sub-flow step takes no lock of its
own (its child type may declare one). A lock key is shown in the API, the console and the logs,
and is the lock's identity: a value found secret only at submission is keyed by a digest
(common.engine.gates.locks.render_key)."""

from __future__ import annotations

from typing import Any

from common.flows.messages import describe
from common.flows.problems import Path, Problem, at
from common.flows.yaml_source import Lines
from common.flows.secrecy import secret_name, secret_source
from common.engine.gates.locks import template_fields

_SHOWN = "a lock key is shown in the API, the console and the logs"


def lock_checks(data: dict[str, Any], lines: Lines) -> list[Problem]:
    problems: list[Problem] = []
    task_types = data.get("task_types")
    for type_name, task_type in (task_types if isinstance(task_types, dict) else {}).items():
        if not isinstance(task_type, dict):
            continue
        declared = task_type.get("parameters")
        base: Path = ("task_types", type_name)
        problems += _key(task_type.get("lock"), base + ("lock",), declared, set(), lines)
        steps = task_type.get("steps")
        for index, step in enumerate(steps if isinstance(steps, list) else []):
            if not isinstance(step, dict) or "lock" not in step:
                continue
            path = base + ("steps", index, "lock")
            if "flow" in step:
                problems.append(at(lines.key(path), path, "a sub-flow step takes no lock: declare it on the child type"))
                continue
            extra = {"item", "item_index"} if "for_each" in step else set()
            problems += _key(step.get("lock"), path, declared, extra, lines)
            if "item" in _names(step.get("lock")) and secret_source("item", step, declared):
                message = f"names item of secret list {describe(step['for_each'])}: {_SHOWN}; key it by item_index"
                problems.append(at(lines.value(path + ("key",)), path + ("key",), message))
    return problems


def _key(lock: Any, path: Path, declared: Any, extra: set[str], lines: Lines) -> list[Problem]:
    key = lock.get("key") if isinstance(lock, dict) else None
    if not isinstance(key, str):
        return []  # the schema reports a missing or mistyped key
    path = path + ("key",)
    try:
        names = template_fields(key)
    except ValueError as error:
        return [at(lines.value(path), path, f"not a key template: {error}")]
    problems = []
    for name in names:
        if name in extra:
            continue
        if isinstance(declared, dict) and name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            message = f"names unknown parameter {describe(name)} (declared parameters: {known})"
            problems.append(at(lines.value(path), path, message))
        elif secret_name(name, declared):
            message = f"names secret parameter {describe(name)}: {_SHOWN}"
            problems.append(at(lines.value(path), path, message))
    return problems


def _names(lock: Any) -> list[str]:
    key = lock.get("key") if isinstance(lock, dict) else None
    try:
        return template_fields(key) if isinstance(key, str) else []
    except ValueError:
        return []
