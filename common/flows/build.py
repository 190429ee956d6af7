"""Validated flows.yaml models -> the `Step` templates a task document copies, defaults applied.

A step template is its name, its place in the graph and its kind (the one its keys declare),
and what each kind of step and each gate makes of the keys it owns (their flows parts, asked
through common.engine.registry); the task type's own lock is made the way a step's is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from common.engine.document import ChildTemplate, NotifyTarget, Step
from common.engine.registry import flows_parts, kind_declared_by
from common.engine.views import lock_template
from common.flows.catalog import FlowCatalog, FlowDefinition
from common.flows.freeze import FreezePolicy, FreezeWindow, parse_duration
from common.flows.parameters import NO_DEFAULT, ParameterField, ParameterSchema
from common.flows.schema import DefaultsSpec, FlowsFile, FreezeSpec, ParameterSpec, StepSpec
from common.flows.versions import content_hash


LockModes = dict[str, dict[str, bool]]


@dataclass(frozen=True)
class _Build:
    """What a part may ask of the flows being built (common.spec.parts.BuildContext)."""

    defaults: DefaultsSpec
    lock_modes: LockModes
    definition: Callable[[str], FlowDefinition]
    on_failure: str | None = None  # the task type's `on_failure`: its for_each steps' default

    def child_template(self, task_type: str) -> ChildTemplate:
        """A sub-flow's child: its type's steps (built first), defaults, secrets, lock, revision."""
        child = self.definition(task_type)
        schema = child.parameter_schema
        return ChildTemplate(
            TaskType=child.name,
            Steps=child.steps,
            Defaults={f.name: f.default for f in schema.fields if f.has_default} if schema else {},
            SecretParameters=child.secret_parameters,
            Lock=child.lock,
            # Each gate's template of the child's type, under its field of the template (`rate`: `Rate`).
            **{key.capitalize(): template for key, template in child.templates.items()},
            FlowVersion=child.version,
            FlowHash=child.content_hash,
        )


def build_catalog(spec: FlowsFile) -> FlowCatalog:
    """Sub-flow steps carry their child type's steps (its template), built first: the checks
    refused sub-flows that include themselves, so the recursion ends."""
    table: LockModes = spec.lock_modes or {}
    built: dict[str, FlowDefinition] = {}

    def definition(name: str) -> FlowDefinition:
        if name not in built:
            task_type = spec.task_types[name]
            index_of = {step.name: i for i, step in enumerate(task_type.steps)}
            build = _Build(spec.defaults or DefaultsSpec(), table, definition, task_type.on_failure)
            steps = [_step(step, i, index_of, build) for i, step in enumerate(task_type.steps)]
            lock = lock_template(task_type.lock, table)
            built[name] = FlowDefinition(
                name=name,
                description=task_type.description,
                steps=steps,
                parameter_schema=_parameter_schema(task_type.parameters),
                deadline=task_type.deadline,
                notify=() if task_type.notify is None else (
                    NotifyTarget(Url=task_type.notify.url, Events=list(task_type.notify.events or [])),),
                lock=lock,
                templates={key: template for part in flows_parts() for key, template in part.task_templates(task_type).items()},
                version=task_type.version,
                content_hash=content_hash(steps, task_type, lock),
            )
        return built[name]

    return FlowCatalog((definition(name) for name in spec.task_types), _freezes(spec.freeze or []))


def _freezes(windows: list[FreezeSpec]) -> list[FreezeWindow]:
    return [FreezeWindow(name=w.name, cron=w.cron, duration=parse_duration(w.duration) or 0.0,
                         task_types=tuple(w.task_types), policy=FreezePolicy(w.policy), timezone=w.timezone)
            for w in windows]  # fmt: skip


def _step(step: StepSpec, index: int, index_of: dict[str, int], build: _Build) -> Step:
    after = [index_of[n] for n in step.after] if step.after is not None else ([index - 1] if index else [])
    fields: dict[str, Any] = {"Name": step.name, "After": after, "Kind": kind_declared_by(step)}
    for part in flows_parts():  # each kind's and gate's fields of the template
        fields.update(part.step_fields(step, build))
    return Step(**fields)


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
