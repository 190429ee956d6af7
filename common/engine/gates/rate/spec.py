"""A rate's part of flows.yaml: `rate:` on a task type (docs/design/rates.md). The block's types
and bounds are `RateSpec` (common.engine.gates.rate.keys; the schema reports a wrong one with its
line); its key is checked as a lock's (common.engine.gates.lock.spec): a template whose `{name}`s
are declared, non-secret parameters, because a rate key is shown wherever the task's wait is.
Built, it is the task type's `rate` template, in its content hash when declared, and what a
submission's parameters make of it is the task's ask of the rate gate (`RateAsk`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.engine.core.key_checks import key_problems
from common.engine.core.key_templates import render_key, template_fields
from common.engine.gates.rate.documents import RateTemplate
from common.engine.gates.rate.keys import RateSpec
from common.engine.gates.rate.task_rate import RateAsk
from common.spec.parts import FlowsPart
from common.spec.problems import Lines, Path, Problem


class RatePart(FlowsPart):
    # At most `limit` starts per key in any `per` seconds (docs/design/rates.md).
    task_keys = {"rate": (RateSpec | None, None)}

    def check_task(self, task_type: dict[str, Any], path: Path, lines: Lines) -> list[Problem]:
        return key_problems(task_type.get("rate"), path + ("rate",), task_type.get("parameters"), set(), lines)

    def task_templates(self, task_type: Any) -> dict[str, Any]:
        return {"rate": rate_template(task_type.rate)}

    def hashed(self, task_type: Any) -> dict[str, Any]:
        rate = task_type.rate
        return {} if rate is None else {"rate": {"key": rate.key, "limit": rate.limit, "per": rate.seconds}}

    def key_parameters(self, template: Any) -> tuple[str, ...]:
        return tuple(dict.fromkeys(template_fields(template.Key))) if template is not None else ()

    def ask(self, template: Any, parameters: Mapping[str, Any], secret: list[str]) -> Any:
        if template is None:
            return None
        return RateAsk(render_key(template.Key, dict(parameters), secret), template.Limit, template.Per)


def rate_template(spec: RateSpec | None) -> RateTemplate | None:
    """The rate a task type declares, its window in seconds."""
    if spec is None:
        return None
    return RateTemplate(Key=spec.key, Limit=spec.limit, Per=spec.seconds)
