"""Validated flows.yaml models -> the `Step` templates a task document copies, defaults applied."""

from __future__ import annotations

from typing import Any

from common.flows.catalog import FlowCatalog, FlowDefinition
from common.flows.parameters import NO_DEFAULT, ParameterField, ParameterSchema
from common.flows.schema import (
    BUILTIN_RETRY,
    BUILTIN_TIMEOUT,
    BackoffSpec,
    DefaultsSpec,
    FlowsFile,
    ParameterSpec,
    PhaseSpec,
)
from common.models import BackoffPolicy, Step


def build_catalog(spec: FlowsFile) -> FlowCatalog:
    defaults = spec.defaults or DefaultsSpec()
    return FlowCatalog(
        FlowDefinition(
            name=name,
            description=task_type.description,
            steps=[
                _step(step.name, step.normal, step.rollback, defaults) for step in task_type.steps
            ],
            parameter_schema=_parameter_schema(task_type.parameters),
        )
        for name, task_type in spec.task_types.items()
    )


def _step(name: str, normal: PhaseSpec, rollback: PhaseSpec | None, defaults: DefaultsSpec) -> Step:
    fields: dict[str, Any] = {"Name": name, **_phase("Normal", normal, defaults)}
    if rollback is not None:  # otherwise the Rollback* fields stay None: no rollback
        fields.update(_phase("Rollback", rollback, defaults))
    return Step(**fields)


def _phase(prefix: str, phase: PhaseSpec, defaults: DefaultsSpec) -> dict[str, Any]:
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


def _parameter_schema(declared: dict[str, ParameterSpec] | None) -> ParameterSchema | None:
    if declared is None:
        return None
    return ParameterSchema(tuple(parameter_field(name, spec) for name, spec in declared.items()))


def parameter_field(name: str, spec: ParameterSpec) -> ParameterField:
    return ParameterField(
        name=name,
        type=spec.type,
        required=spec.required,
        default=NO_DEFAULT if spec.default is None else spec.default,
        description=spec.description,
        minimum=spec.minimum,
        maximum=spec.maximum,
        min_length=spec.min_length,
        max_length=spec.max_length,
        pattern=spec.pattern,
        enum=tuple(spec.enum) if spec.enum is not None else None,
        secret=spec.secret,
    )
