"""A lock's part of flows.yaml: the checks of a `lock:` key template (on a task type here, on a
step in common.engine.gates.step_lock.spec), and what a declared lock becomes in a template.

The template parses, and each `{name}` in it is a declared parameter, never a secret one: neither
declared `secret: true` nor named like one (password, token, ...: masked wherever a task is
shown), in a type that declares its parameters or one that leaves `parameters:` out (whose other
names are checked at submission). A lock key is shown in the API, the console and the logs, and
is the lock's identity: a value found secret only at submission is keyed by a digest
(common.engine.gates.lock.table.render_key).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.engine.gates.lock.documents import LockTemplate
from common.engine.gates.lock.modes import EXCLUSIVE, shares_of
from common.engine.gates.lock.table import template_fields
from common.spec.keys import LockSpec
from common.spec.parts import FlowsPart
from common.spec.problems import Lines, Path, Problem, at, describe
from common.secrets.names import secret_name

SHOWN = "a lock key is shown in the API, the console and the logs"


class LockPart(FlowsPart):
    def check_task(self, task_type: dict[str, Any], path: Path, lines: Lines) -> list[Problem]:
        return key_problems(task_type.get("lock"), path + ("lock",), task_type.get("parameters"), set(), lines)


def lock_template(spec: LockSpec | None, lock_modes: Mapping[str, Mapping[str, bool]]) -> LockTemplate | None:
    """The lock a template declares. Exclusive (no mode) leaves Mode and Shares out, as before modes."""
    if spec is None:
        return None
    if spec.mode is None or spec.mode == EXCLUSIVE:
        return LockTemplate(Key=spec.key, Limit=spec.limit)
    return LockTemplate(Key=spec.key, Limit=spec.limit, Mode=spec.mode, Shares=shares_of(spec.mode, lock_modes))


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
