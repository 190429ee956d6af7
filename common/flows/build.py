"""Validated flows.yaml models -> the `Step` templates a task document copies, defaults applied."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from common.flows.catalog import FlowCatalog, FlowDefinition
from common.flows.freeze import FreezePolicy, FreezeWindow, parse_duration
from common.flows.versions import content_hash
from common.flows.parameters import NO_DEFAULT, ParameterField, ParameterSchema
from common.flows.schema import (
    BUILTIN_RETRY,
    BUILTIN_TIMEOUT,
    BackoffSpec,
    DefaultsSpec,
    FlowsFile,
    FreezeSpec,
    LockSpec,
    ParameterSpec,
    PhaseSpec,
    StepSpec,
)
from common.engine.gates.lock_modes import EXCLUSIVE, shares_of
from common.engine.document import BackoffPolicy, ChildTemplate, LockTemplate, NotifyTarget, Step


LockModes = dict[str, dict[str, bool]]


def build_catalog(spec: FlowsFile) -> FlowCatalog:
    """Sub-flow steps carry their child type's steps (its template), built first: the checks
    refused sub-flows that include themselves, so the recursion ends."""
    defaults = spec.defaults or DefaultsSpec()
    table: LockModes = spec.lock_modes or {}
    built: dict[str, FlowDefinition] = {}

    def definition(name: str) -> FlowDefinition:
        if name not in built:
            task_type = spec.task_types[name]
            index_of = {step.name: i for i, step in enumerate(task_type.steps)}
            steps = [_step(step, i, index_of, defaults, definition, table) for i, step in enumerate(task_type.steps)]
            lock = _lock(task_type.lock, table)
            built[name] = FlowDefinition(
                name=name,
                description=task_type.description,
                steps=steps,
                parameter_schema=_parameter_schema(task_type.parameters),
                deadline=task_type.deadline,
                notify=() if task_type.notify is None else (
                    NotifyTarget(Url=task_type.notify.url, Events=list(task_type.notify.events or [])),),
                lock=lock,
                version=task_type.version,
                content_hash=content_hash(steps, task_type, lock),
            )
        return built[name]

    return FlowCatalog((definition(name) for name in spec.task_types), _freezes(spec.freeze or []))


def _freezes(windows: list[FreezeSpec]) -> list[FreezeWindow]:
    return [FreezeWindow(name=w.name, cron=w.cron, duration=parse_duration(w.duration) or 0.0,
                         task_types=tuple(w.task_types), policy=FreezePolicy(w.policy), timezone=w.timezone)
            for w in windows]  # fmt: skip


def _step(step: StepSpec, index: int, index_of: dict[str, int], defaults: DefaultsSpec,
          definition: Callable[[str], FlowDefinition], table: LockModes) -> Step:
    after = [index_of[n] for n in step.after] if step.after is not None else ([index - 1] if index else [])
    fields: dict[str, Any] = {"Name": step.name, "After": after, "ForEach": step.for_each,
                              "MaxParallel": step.max_parallel, "MaxItems": step.max_items, "MaxWait": step.max_wait,
                              "Lock": _lock(step.lock, table)}
    if step.normal is not None:
        fields.update(_phase("Normal", step.normal, defaults))
    if step.rollback is not None:  # otherwise the Rollback* fields stay None: no rollback
        fields.update(_phase("Rollback", step.rollback, defaults))
    if step.flow is not None:
        child = definition(step.flow)
        schema = child.parameter_schema
        fields.update(Flow=step.flow, FlowInputs=dict(step.inputs or {}), FlowTemplate=ChildTemplate(
            TaskType=child.name,
            Steps=child.steps,
            Defaults={f.name: f.default for f in schema.fields if f.has_default} if schema else {},
            SecretParameters=child.secret_parameters,
            Lock=child.lock,
            FlowVersion=child.version,
            FlowHash=child.content_hash,
        ))
    return Step(**fields)


def _lock(spec: LockSpec | None, table: LockModes) -> LockTemplate | None:
    """Exclusive (no mode) leaves Mode and Shares out, as before modes."""
    if spec is None:
        return None
    if spec.mode is None or spec.mode == EXCLUSIVE:
        return LockTemplate(Key=spec.key, Limit=spec.limit)
    return LockTemplate(Key=spec.key, Limit=spec.limit, Mode=spec.mode, Shares=shares_of(spec.mode, table))


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
