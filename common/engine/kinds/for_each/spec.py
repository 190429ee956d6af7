"""A `for_each` step's part of flows.yaml: `for_each` (a parameter declared `type: array`, whose
presence declares the step's kind), `max_parallel` and `max_items`, their checks, its fields of
the template, and the check of a submission's lists against `max_items`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, Union

from pydantic import Discriminator, Field, Tag, model_validator

from common.engine.core.declared import declared_parts
from common.engine.kinds.for_each.item_limits import too_many_items
from common.engine.kinds.for_each.fields import Tolerance
from common.engine.kinds.for_each.spec_part import ForEachSpecPart
from common.spec.keys import Identifier, Spec
from common.spec.parts import BuildContext, FlowsPart, StepContext, mapping
from common.spec.problems import Lines, Path, Problem, at, describe


class ToleranceSpec(Spec):
    """`tolerate: {count: N}` or `tolerate: {percent: P}`: how many of a for_each step's items may
    fail for good without failing the step (docs/fan-out.md)."""

    count: Annotated[int, Field(ge=0)] | None = None
    percent: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> ToleranceSpec:
        if (self.count is None) == (self.percent is None):
            raise ValueError("give exactly one of count (items) or percent (of the step's items)")
        return self


# Each extension's part (its `spec.py`'s `PART`: its waves, its source), in their folders' order.
EXTENSION_PARTS: tuple[ForEachSpecPart, ...] = declared_parts("common.engine.kinds.for_each", "PART", module="spec")
_FORMS = [part for part in EXTENSION_PARTS if part.form is not None]


def _for_each_form(value: Any) -> str:
    form = next((part.form for part in _FORMS if part.takes_form(value)), None)
    return form[0] if form is not None else "~parameter"  # "~": a form's tag, no key (common.flows.messages)


# A list parameter's name, or an extension's form (a source): told apart by the value's shape, so
# a problem names the form the user wrote (a union would report both forms' complaints).
ForEachKey = Annotated[Union[(Annotated[Identifier, Tag("~parameter")],
                              *(Annotated[part.form[1], Tag(part.form[0])] for part in _FORMS))],
                       Discriminator(_for_each_form)]


def _extension_keys() -> dict[str, tuple[Any, Any]]:
    return {key: value for part in EXTENSION_PARTS for key, value in part.step_keys.items()}


class ForEachPart(FlowsPart):
    step_keys = {
        # a parameter declared `type: array`, or an extension's form (`{source: {...}}`)
        "for_each": (ForEachKey | None, None),
        "max_parallel": (Annotated[int, Field(ge=1)] | None, None),  # items running at once
        # The longest list this step fans out over: a longer one is refused at submission (422) or,
        # grown by a step's output, fails this step when it opens (docs/limits.md).
        "max_items": (Annotated[int, Field(ge=1)] | None, None),
        # Its failure budget: items that may fail for good, each rolled back on its own, while the
        # step still succeeds (with failed items).
        "tolerate": (ToleranceSpec | None, None),
        # An item failing for good past the budget: the task rolls back (the default), or holds
        # for an operator to redrive it or roll it back.
        "on_failure": (Literal["rollback", "hold"] | None, None),
        **_extension_keys(),  # its waves'
    }
    declared_by = "for_each"

    def check_step(self, step: dict[str, Any], path: Path, context: StepContext, lines: Lines) -> list[Problem]:
        problems = []
        limits = ("max_parallel", "max_items", "tolerate", "on_failure", *(k for p in EXTENSION_PARTS for k in p.needs_for_each))
        for limit in limits:
            if limit in step and "for_each" not in step:
                where = path + (limit,)
                problems.append(at(lines.key(where), where, "only a for_each step takes it: add for_each, or remove it"))
        for part in EXTENSION_PARTS:
            problems += part.check_step(step, path, context, lines)
        for key in ("tolerate", "on_failure", *(k for p in EXTENSION_PARTS for k in p.needs_records)):
            for inline in ("flow", "lock"):  # their items stay in the task document: not there yet
                if key in step and "for_each" in step and inline in step:
                    where = path + (key,)
                    problems.append(at(lines.key(where), where, f"not supported on a for_each step with {inline} "
                                       "(its items stay in the task document): remove one of them"))
        name = step.get("for_each")
        form = next((part for part in _FORMS if part.takes_form(name)), None)
        if form is not None:  # an extension's form (a source)
            return problems + form.check_form(step, path, lines)
        if not isinstance(name, str):
            return problems
        where = path + ("for_each",)
        declared = context.declared
        declaration = mapping(declared).get(name) if declared is not None else None
        if declared is None:
            problems.append(at(lines.value(where), where, f"parameter {describe(name)} is not declared: "
                               "declare it under the task type's parameters with type: array"))
        elif declaration is None:
            problems.append(at(lines.value(where), where, f"unknown parameter {describe(name)} "
                               f"(declared: {', '.join(declared) or 'none'})"))
        elif mapping(declaration).get("type") != "array":
            kind = mapping(declaration).get("type")
            problems.append(at(lines.value(where), where, f"parameter {describe(name)} must be declared "
                               f"type: array to fan out over it (it is {describe(kind)})"))
        return problems

    def step_fields(self, spec: Any, build: BuildContext) -> dict[str, Any]:
        tolerate = spec.tolerate
        budget = None if tolerate is None else Tolerance(Count=tolerate.count, Percent=tolerate.percent)
        # The step's own policy, else its task type's, for a step whose items can be held (over
        # records: not a sub-flow's, not under a step lock); every other step rolls back.
        policy = spec.on_failure or getattr(build, "on_failure", None)
        holds = policy == "hold" and spec.for_each is not None and spec.flow is None and spec.lock is None
        over = spec.for_each
        fields = {"ForEach": over if isinstance(over, str) else None, "MaxParallel": spec.max_parallel,
                  "MaxItems": spec.max_items, "Tolerate": budget, "OnFailure": "hold" if holds else None}
        for part in EXTENSION_PARTS:
            fields.update(part.step_fields(spec))
        return fields

    def check_task(self, task_type: dict[str, Any], path: Path, lines: Lines) -> list[Problem]:
        if task_type.get("on_failure") != "hold":
            return []
        steps = task_type.get("steps")
        holding = [s for s in steps if isinstance(s, dict) and "for_each" in s and "flow" not in s and "lock" not in s] \
            if isinstance(steps, list) else []
        if holding:
            return []
        where = path + ("on_failure",)
        return [at(lines.value(where), where, "on_failure: hold holds a for_each step (without flow or lock) at a "
                "failure; this task type has none: remove it, or its steps roll back")]

    def submission_problems(self, steps: Iterable[Any], parameters: Mapping[str, Any]) -> list[tuple[str, str]]:
        return too_many_items(steps, parameters)
