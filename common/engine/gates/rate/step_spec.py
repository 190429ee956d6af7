"""A step rate's part of flows.yaml: `rate:` on a command step (each attempt of its normal phase
takes a slot before it is published, docs/design/rates.md "Step rates"), its checks and its field
of the template. The key is checked as a lock's; a step takes a lock or a rate, not both (a unit
granted its lock would then wait for a slot while holding the lock), and a `for_each` or sub-flow
step takes none (a sub-flow's claims are its child's; declare it on the child's steps)."""

from __future__ import annotations

from typing import Any

from common.engine.core.key_checks import key_problems
from common.engine.gates.rate.spec import rate_template
from common.engine.gates.rate.keys import RateSpec
from common.spec.parts import BuildContext, FlowsPart, StepContext
from common.spec.problems import Lines, Path, Problem, at


class StepRatePart(FlowsPart):
    step_keys = {"rate": (RateSpec | None, None)}

    def check_step(self, step: dict[str, Any], path: Path, context: StepContext, lines: Lines) -> list[Problem]:
        if "rate" not in step:
            return []
        path = path + ("rate",)
        if "flow" in step or "for_each" in step:
            which = "a sub-flow" if "flow" in step else "a for_each"
            return [at(lines.key(path), path, f"{which} step takes no rate: declare it on a command step")]
        if "lock" in step:
            return [at(lines.key(path), path, "a step takes a lock or a rate, not both")]
        return key_problems(step.get("rate"), path, context.task_type.get("parameters"), set(), lines)

    def step_fields(self, spec: Any, build: BuildContext) -> dict[str, Any]:
        return {"Rate": rate_template(spec.rate)}
