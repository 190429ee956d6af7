"""A lock's part of flows.yaml: the checks of a `lock:` key template (on a task type here, on a
step in common.engine.gates.lock.step_spec; the checks are common.engine.core.key_checks'), and
what a declared lock becomes in a template.

The template parses, and each `{name}` in it is a declared parameter, never a secret one: neither
declared `secret: true` nor named like one (password, token, ...: masked wherever a task is
shown), in a type that declares its parameters or one that leaves `parameters:` out (whose other
names are checked at submission). A lock key is shown in the API, the console and the logs, and
is the lock's identity: a value found secret only at submission is keyed by a digest
(common.engine.core.key_templates.render_key).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.engine.gates.lock.documents import LockTemplate
from common.engine.gates.lock.modes import EXCLUSIVE, shares_of
from common.engine.core.key_checks import key_problems
from common.spec.keys import LockSpec
from common.spec.parts import FlowsPart
from common.spec.problems import Lines, Path, Problem


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
