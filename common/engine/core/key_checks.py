"""The checks of a key template in flows.yaml (a `lock:` or `rate:` block's `key`), shared by the
gates that key a table by one: the template parses, and each `{name}` in it is a declared
parameter, never a secret one (declared `secret: true` or named like one), because the key is
shown wherever its task's wait is."""

from __future__ import annotations

from typing import Any

from common.engine.core.key_templates import template_fields
from common.secrets.names import secret_name
from common.spec.problems import Lines, Path, Problem, at, describe

SHOWN = "a lock key is shown in the API, the console and the logs"


def key_problems(lock: Any, path: Path, declared: Any, extra: set[str], lines: Lines) -> list[Problem]:
    """What is wrong with a `lock:` block's key template (`extra`: names it may use besides the
    declared parameters: a for_each step's item)."""
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
            message = f"names secret parameter {describe(name)}: {SHOWN}"
            problems.append(at(lines.value(path), path, message))
    return problems


def key_names(lock: Any) -> list[str]:
    """The names a `lock:` block's key template uses ([] when it is not one)."""
    key = lock.get("key") if isinstance(lock, dict) else None
    try:
        return template_fields(key) if isinstance(key, str) else []
    except ValueError:
        return []
