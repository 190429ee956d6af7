"""A command step's part of flows.yaml: `normal` (required unless the step runs a child task),
`rollback` (left out: nothing to undo, passed over while rolling back) and `max_wait`, and the
phases' fields of the template, their limits filled in from `defaults`."""

from __future__ import annotations

from typing import Any

from common.engine.core.unit_doc import BackoffPolicy
from common.spec.keys import BackoffSpec, PhaseSpec, Seconds
from common.spec.parts import BuildContext, FlowsPart, StepContext
from common.spec.problems import Lines, Path, Problem, at

# What a phase gets when neither it nor `defaults` says. Backoff falls back field by field to
# BackoffPolicy's defaults. No retry unless asked: a user opts into re-running.
BUILTIN_TIMEOUT = 60.0
BUILTIN_RETRY = 0


class CommandPart(FlowsPart):
    step_keys = {
        "normal": (PhaseSpec | None, None),
        "rollback": (PhaseSpec | None, None),
        # Seconds a phase may keep answering "check again later" in total; past it the unit fails
        # like a timeout. Left out: no bound.
        "max_wait": (Seconds | None, None),
    }

    def check_step(self, step: dict[str, Any], path: Path, context: StepContext, lines: Lines) -> list[Problem]:
        if "normal" not in step and not context.no_command_keys & step.keys():  # it runs a command: which?
            return [at(lines.value(path), path + ("normal",), "required key is missing")]
        return []

    def step_fields(self, spec: Any, build: BuildContext) -> dict[str, Any]:
        fields: dict[str, Any] = {"MaxWait": spec.max_wait}
        if spec.normal is not None:
            fields.update(_phase("Normal", spec.normal, build.defaults))
        if spec.rollback is not None:  # otherwise the Rollback* fields stay None: no rollback
            fields.update(_phase("Rollback", spec.rollback, build.defaults))
        return fields


def _phase(prefix: str, phase: PhaseSpec, defaults: Any) -> dict[str, Any]:
    timeout = phase.timeout if phase.timeout is not None else defaults.timeout
    retry = phase.retry if phase.retry is not None else defaults.retry
    return {
        f"{prefix}Module": phase.module,
        f"{prefix}Command": phase.command,
        f"{prefix}Timeout": float(timeout if timeout is not None else BUILTIN_TIMEOUT),
        f"{prefix}Retry": retry if retry is not None else BUILTIN_RETRY,
        f"{prefix}Backoff": _backoff(defaults.backoff, phase.backoff),
    }


def _backoff(*layers: BackoffSpec | None) -> BackoffPolicy:
    """Merged field by field: later layers win; what none gives keeps BackoffPolicy's default."""
    merged: dict[str, float] = {}
    for layer in layers:
        if layer is not None:
            merged.update(layer.model_dump(exclude_none=True))
    return BackoffPolicy(**{key.capitalize(): float(value) for key, value in merged.items()})
