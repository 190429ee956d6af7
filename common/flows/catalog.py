"""The task types flows.yaml defines, as OSS and the modules look them up."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial
from types import MappingProxyType
from typing import Any

from common.errors import UnknownTaskType
from common.flows.freeze import FreezeWindow
from common.flows.step_copies import NoPlan, copier_of
from common.flows.parameters import FieldError, ParameterCheck, ParameterSchema, validate_parameters
from common.engine.views import ask_for, LockAsk, render_key, template_fields
from common.engine.registry import flows_parts
from common.engine.document import LockTemplate, NotifyTarget, Step
from common.spec.parts import FlowsPart


@dataclass(frozen=True)
class FlowDefinition:
    """One task type. Its steps are templates shared by every task: treat them as read-only
    (create_task copies them into the new task document)."""

    name: str
    description: str
    steps: list[Step]
    parameter_schema: ParameterSchema | None  # None: `parameters:` left out, anything goes
    deadline: float | None = None  # seconds the task has to finish (flows.yaml `deadline`)
    notify: tuple[NotifyTarget, ...] = ()  # flows.yaml `notify`: its webhook of status changes
    lock: LockTemplate | None = None  # `lock:` of the task type (common/engine/gates/lock/table.py)
    # Each gate's template of its key on the task type, by key (`rate`: docs/design/rates.md); read
    # as `definition.<key>`, and made into the gate's ask by `ask`.
    templates: Mapping[str, Any] = field(default_factory=dict)
    version: str | None = None  # flows.yaml `version:` of the task type, if it names one
    # "sha256:<16 hex>" of what a task of this type runs (common/flows/versions.py)
    content_hash: str = ""

    def new_steps(self) -> list[Step]:
        """Copies of the steps for a new task, its own to change: what reading back their JSON
        (written once per task type) gives, copied from one such reading
        (common/flows/step_copies.py)."""
        return [copy() for copy in self._step_copiers]

    @cached_property
    def _step_copiers(self) -> tuple[Callable[[], Step], ...]:
        texts = [step.model_dump_json() for step in self.steps]
        try:
            return tuple(copier_of(Step.model_validate_json(text)) for text in texts)
        except NoPlan:  # a value no plan copies for sure: read back from the JSON each time
            return tuple(partial(Step.model_validate_json, text) for text in texts)

    def validate(self, parameters: Mapping[str, Any]) -> ParameterCheck:
        """The job's parameters checked against this type's schema, defaults filled in. The
        parameters its lock key names are required as well: the key cannot be made without
        them (the published schema marks them required too)."""
        check = validate_parameters(self.parameter_schema, parameters)
        errors = [FieldError(f"parameters.{name}", f"required parameter is missing (the task type's {what} key names it)")
                  for name, what in self._key_parameters() if name not in check.parameters
                  and not any(e.path == f"parameters.{name}" for e in check.errors)]  # fmt: skip
        errors += [FieldError(path, message) for part in flows_parts()  # a for_each step's max_items, ...
                   for path, message in part.submission_problems(self.steps, check.parameters)]
        if not errors:
            return check
        return ParameterCheck(check.parameters, (*check.errors, *errors))

    @property
    def lock_parameters(self) -> tuple[str, ...]:
        """The parameters the task type's lock key names (none without a lock)."""
        return tuple(dict.fromkeys(template_fields(self.lock.Key))) if self.lock is not None else ()

    def key_parameters(self, key: str) -> tuple[str, ...]:
        """The parameters the task type's `key` (a gate's key on it) names."""
        return _part_of(key).key_parameters(self.templates.get(key))

    def _key_parameters(self) -> list[tuple[str, str]]:
        named = [(name, "lock") for name in self.lock_parameters]
        for key in self.templates:
            named += [(name, key) for name in self.key_parameters(key) if name not in dict(named)]
        return named

    def ask(self, key: str, parameters: Mapping[str, Any]) -> Any:
        """What a task of this type with these parameters asks of the gate of the task type's `key`
        (None: the type does not declare it). LockKeyError when the key names a parameter not given."""
        return _part_of(key).ask(self.templates.get(key), parameters, self.secret_parameters)

    def __getattr__(self, name: str) -> Any:
        """A gate's key on the task type, read by its name: `definition.<key>` is its template,
        `definition.<key>_ask(parameters)` its ask."""
        templates = self.__dict__.get("templates", {})
        if name in templates:
            return templates[name]
        if name.endswith("_ask") and name[:-4] in templates:
            return lambda parameters: self.ask(name[:-4], parameters)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def lock_ask(self, parameters: Mapping[str, Any]) -> LockAsk | None:
        """What a task of this type with these parameters asks of the lock table; None when the
        type declares no lock. LockKeyError when the key names a parameter not given."""
        if self.lock is None:
            return None
        return ask_for(self.lock, render_key(self.lock.Key, dict(parameters), self.secret_parameters))

    @property
    def secret_parameters(self) -> list[str]:
        return self.parameter_schema.secret_names if self.parameter_schema else []


def _part_of(key: str) -> FlowsPart:
    """The part that owns `key` on a task type."""
    return next(part for part in flows_parts() if key in part.task_keys)


class FlowCatalog:
    def __init__(self, definitions: Iterable[FlowDefinition], freezes: Iterable[FreezeWindow] = ()) -> None:
        self._task_types = {definition.name: definition for definition in definitions}
        self.freezes: tuple[FreezeWindow, ...] = tuple(freezes)  # flows.yaml `freeze:` (common/flows/freeze.py)

    @property
    def task_types(self) -> Mapping[str, FlowDefinition]:
        """Name -> definition, in the order of the file."""
        return MappingProxyType(self._task_types)

    def get(self, name: str) -> FlowDefinition:
        try:
            return self._task_types[name]
        except KeyError:
            known = ", ".join(self._task_types) or "none"
            # The name asked for is not echoed: the caller has it, and a refused value never is.
            raise UnknownTaskType(f"not a task type flows.yaml defines (known task types: {known})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._task_types

    def modules(self) -> set[str]:
        """Every module named by a step, normal or rollback: each needs a running consumer."""
        return {module for step in self._steps() for module in _modules(step)}

    def commands_of(self, module: str) -> set[str]:
        """The commands `module` must serve for these flows, normal and rollback alike."""
        commands = set()
        for step in self._steps():
            if step.NormalModule == module and step.NormalCommand is not None:
                commands.add(step.NormalCommand)
            if step.RollbackModule == module and step.RollbackCommand is not None:
                commands.add(step.RollbackCommand)
            if step.Source is not None and step.Source.Module == module:  # a for_each step's source of items
                commands.add(step.Source.Command)
        return commands

    def _steps(self) -> Iterable[Step]:
        return (step for definition in self._task_types.values() for step in definition.steps)


def _modules(step: Step) -> list[str]:
    return [m for m in (step.NormalModule, step.RollbackModule, step.Source.Module if step.Source else None) if m]
