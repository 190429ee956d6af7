"""The waves of a `for_each` step in flows.yaml (docs/design/waves.md): `waves` (a list of sizes,
each a number of items, "P%" of the step's items, "rest", or a mapping with `size` and the gate
after the wave) and `between_waves` (the gate after every wave that gives none), their checks
and the step document's `Waves` they build."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from common.engine.kinds.for_each.tolerance_doc import Tolerance
from common.engine.kinds.for_each.spec_part import ForEachSpecPart
from common.engine.kinds.for_each.waves.fields import WaveCheck, WaveSpecDoc
from common.spec.durations import checked_duration, parse_duration
from common.spec.keys import Identifier, Spec
from common.spec.parts import StepContext
from common.spec.problems import Lines, Path, Problem, at, describe

PERCENT = re.compile(r"^(\d+(\.\d+)?)%$")
SIZE_PROBLEM = 'must be a number of items (>= 1), a percentage like "10%" (above 0, at most 100) or "rest"'


def size_problem(value: object) -> str | None:
    if isinstance(value, bool):
        return SIZE_PROBLEM
    if isinstance(value, int):
        return None if value >= 1 else SIZE_PROBLEM
    if value == "rest":
        return None
    found = PERCENT.fullmatch(value) if isinstance(value, str) else None
    return None if found and 0 < float(found.group(1)) <= 100 else SIZE_PROBLEM


class PauseSpec(Spec):
    """`pause: true`, or `pause: {timeout, on_timeout}`: wait for an operator's continue, at most
    `timeout` when given."""

    on: bool = True  # `pause: false` reads as {on: false}: no pause
    timeout: float | str | None = None
    on_timeout: Literal["continue", "fail"] | None = None

    _timeout = field_validator("timeout")(checked_duration)

    @model_validator(mode="before")
    @classmethod
    def _true_or_a_mapping(cls, value: Any) -> Any:
        return {"on": value} if isinstance(value, bool) else value

    @model_validator(mode="after")
    def _timeout_first(self) -> PauseSpec:
        if self.on_timeout is not None and self.timeout is None:
            raise ValueError("on_timeout needs a timeout: add pause.timeout")
        return self


class WaveBudgetSpec(Spec):
    count: Annotated[int, Field(ge=0)] | None = None
    percent: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> WaveBudgetSpec:
        if (self.count is None) == (self.percent is None):
            raise ValueError("give exactly one of count (items) or percent (of the wave's items)")
        return self


class CheckSpec(Spec):
    """`check: {module, command}`: a health check of the wave, run as a child task of its own."""

    module: Identifier
    command: Identifier


class GateSpec(Spec):
    """What happens after a wave before the next one starts: a bake, a check, a pause (in that order)."""

    bake: float | str | None = None
    check: CheckSpec | None = None
    pause: PauseSpec | None = None

    _bake = field_validator("bake")(checked_duration)


class WaveSpec(GateSpec):
    """A wave: a size alone (`10`, `"10%"`, `rest`), or a mapping with its size and gate."""

    size: Any  # checked below: a number of items, "P%" or "rest"
    tolerate: WaveBudgetSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _a_size_alone(cls, value: Any) -> Any:
        return value if isinstance(value, dict) else {"size": value}

    @field_validator("size")
    @classmethod
    def _size(cls, value: Any) -> int | str:
        problem = size_problem(value)
        if problem is not None:
            raise ValueError(f"{problem} (got {describe(value)})")
        return value


def check_sizes(waves: list) -> str | None:
    """What is wrong with the list as a whole (the sizes one by one are checked by their model)."""
    if not waves:
        return "give at least one wave"
    sizes = [wave.get("size") if isinstance(wave, dict) else wave for wave in waves]
    if "rest" in sizes[:-1]:
        return 'only the last wave may be "rest": it takes every item left'
    return None


WavesKey = list[WaveSpec]


def build_waves(waves: WavesKey | None, between: GateSpec | None) -> list[dict[str, Any]] | None:
    """The step document's `Waves`: each wave's size, and its gate (its own, else `between`)."""
    if not waves:
        return None
    built = []
    for own in waves:
        # A wave that says anything of its gate (even `pause: false`) has its own; else the step's.
        gate = own if own.bake is not None or own.check is not None or own.pause is not None else between
        doc = WaveSpecDoc(Size=own.size)
        if gate is not None:
            doc.Bake = parse_duration(gate.bake) if gate.bake is not None else None
            if gate.check is not None:
                doc.Check = WaveCheck(Module=gate.check.module, Command=gate.check.command)
            pause = gate.pause
            if pause is not None and pause.on:
                doc.Pause, doc.OnTimeout = True, pause.on_timeout
                doc.PauseTimeout = parse_duration(pause.timeout) if pause.timeout is not None else None
        if own.tolerate is not None:
            doc.Tolerate = Tolerance(Count=own.tolerate.count, Percent=own.tolerate.percent)
        built.append(doc.model_dump(mode="json"))
    return built


class WavesPart(ForEachSpecPart):
    # Its items in successive batches, with a gate between them (docs/fan-out.md, "Waves").
    step_keys = {
        "waves": (WavesKey | None, None),
        "between_waves": (GateSpec | None, None),
    }
    needs_for_each = ("waves", "between_waves")
    needs_records = ("waves",)

    def check_step(self, step: dict[str, Any], path: Path, context: StepContext, lines: Lines) -> list[Problem]:
        problems = []
        if "between_waves" in step and "waves" not in step:
            where = path + ("between_waves",)
            problems.append(at(lines.key(where), where, "the gate between a step's waves: add waves, or remove it"))
        waves = step.get("waves")
        if isinstance(waves, list) and (wrong := check_sizes(waves)) is not None:
            where = path + ("waves",)
            problems.append(at(lines.value(where), where, wrong))
        return problems

    def step_fields(self, spec: Any) -> dict[str, Any]:
        return {"Waves": build_waves(spec.waves, spec.between_waves)}


PART = WavesPart()
