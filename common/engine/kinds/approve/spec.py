"""An approval step's part of flows.yaml: `approve` (whose presence declares the step's kind):
`count`, `roles`, `not_submitter`, `timeout`, `on_timeout`; its checks (an approval step runs
nothing of its own) and its field of the template."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from common.spec.durations import checked_duration, parse_duration
from common.spec.keys import Spec
from common.spec.parts import BuildContext, FlowsPart, StepContext, mapping
from common.spec.problems import Lines, Path, Problem, at

MAX_APPROVERS = 100


class ApproveSpec(Spec):
    count: Annotated[int, Field(ge=1, le=MAX_APPROVERS)] = 1
    # The roles of the API's tokens that change things (a read token changes nothing): a token may
    # act as its own role and those below it.
    roles: Annotated[list[Literal["submit", "operator"]], Field(min_length=1)] = ["operator"]
    not_submitter: bool = False
    timeout: float | str | None = None  # seconds, or "4h", "30m", "2d"
    on_timeout: Literal["reject", "approve"] = "reject"

    _timeout = field_validator("timeout")(checked_duration)


class ApprovePart(FlowsPart):
    step_keys = {"approve": (ApproveSpec | None, None)}
    declared_by = "approve"
    runs_no_command = True

    def check_step(self, step: dict[str, Any], path: Path, context: StepContext, lines: Lines) -> list[Problem]:
        if "approve" not in step:
            return []
        problems = [at(lines.key(path + (key,)), path + (key,), f"an approval step (approve) {what}: remove it")
                    for key, what in (("normal", "runs no command"), ("rollback", "runs no command"),
                                      ("max_wait", "runs no command"), ("flow", "runs no child task"),
                                      ("for_each", "runs no items"), ("lock", "holds no lock (it runs nothing)"),
                                      ("rate", "takes no rate (it runs nothing)"))
                    if key in step]
        rule = mapping(step.get("approve"))
        if "on_timeout" in rule and "timeout" not in rule:
            where = path + ("approve", "on_timeout")
            problems.append(at(lines.key(where), where, "needs a timeout: add approve.timeout"))
        return problems

    def step_fields(self, spec: Any, build: BuildContext) -> dict[str, Any]:
        rule = spec.approve
        if rule is None:
            return {}
        return {"Approve": {"Count": rule.count, "Roles": list(dict.fromkeys(rule.roles)),
                            "NotSubmitter": rule.not_submitter,
                            "Timeout": None if rule.timeout is None else parse_duration(rule.timeout),
                            "OnTimeout": rule.on_timeout}}
