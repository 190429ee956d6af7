"""A step lock's part of flows.yaml: `lock:` on a step (each unit's normal phase holds its key),
its checks and its field of the template. A step's key may also name `item` and `item_index` on
a `for_each` step, but not `item` when the list is secret; a sub-flow step takes no lock of its
own (its child type may declare one)."""

from __future__ import annotations

from typing import Any

from common.engine.core.key_checks import SHOWN, key_names, key_problems
from common.engine.gates.lock.spec import lock_template
from common.spec.keys import LockSpec
from common.spec.parts import BuildContext, FlowsPart, StepContext
from common.spec.problems import Lines, Path, Problem, at, describe
from common.secrets.names import secret_source


class StepLockPart(FlowsPart):
    step_keys = {"lock": (LockSpec | None, None)}

    def check_step(self, step: dict[str, Any], path: Path, context: StepContext, lines: Lines) -> list[Problem]:
        if "lock" not in step:
            return []
        path = path + ("lock",)
        if "flow" in step:
            return [at(lines.key(path), path, "a sub-flow step takes no lock: declare it on the child type")]
        declared = context.task_type.get("parameters")
        extra = {"item", "item_index"} if "for_each" in step else set()
        problems = key_problems(step.get("lock"), path, declared, extra, lines)
        if "item" in key_names(step.get("lock")) and secret_source("item", step, declared):
            message = f"names item of secret list {describe(step['for_each'])}: {SHOWN}; key it by item_index"
            problems.append(at(lines.value(path + ("key",)), path + ("key",), message))
        return problems

    def step_fields(self, spec: Any, build: BuildContext) -> dict[str, Any]:
        return {"Lock": lock_template(spec.lock, build.lock_modes)}
