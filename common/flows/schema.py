"""The flows.yaml format as pydantic models: the allowed keys, types and bounds of every value.

Strict on purpose: `timeout: "10"` or `retry: true` is a mistake to report, not to coerce. An
optional key is left out to take its default; an empty value (`timeout:`) is an error, because it
is far more often a forgotten value than a wish for the default.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

# Task type, step, module and command names. Module names become RabbitMQ queue names.
IDENTIFIER_PATTERN = r"^[a-z][a-z0-9_]*$"
Identifier = Annotated[str, StringConstraints(pattern=IDENTIFIER_PATTERN)]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]  # strict float takes ints, not bools
Retries = Annotated[int, Field(ge=0)]

# What a phase gets when neither it nor `defaults` says. Backoff falls back field by field to
# common.models.BackoffPolicy's defaults. No retry unless asked: a user opts into re-running.
BUILTIN_TIMEOUT = 60.0
BUILTIN_RETRY = 0


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _not_empty(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            required = (
                info.field_name is not None and cls.model_fields[info.field_name].is_required()
            )
            raise ValueError("is empty: write a value" + ("" if required else " or remove the key"))
        return value


class BackoffSpec(_Spec):
    """Delay before retry n: min(max, initial * multiplier**(n-1)), spread by +- jitter."""

    initial: Seconds | None = None
    max: Seconds | None = None  # checked against initial after merging with defaults (checks.py)
    multiplier: Annotated[float, Field(ge=1, allow_inf_nan=False)] | None = None
    jitter: Annotated[float, Field(ge=0, lt=1)] | None = None


class DefaultsSpec(_Spec):
    timeout: Seconds | None = None
    retry: Retries | None = None  # retries after the first attempt
    backoff: BackoffSpec | None = None


class PhaseSpec(_Spec):
    """How to run one phase (normal or rollback) of a step: which module's command, and limits."""

    module: Identifier
    command: Identifier
    timeout: Seconds | None = None
    retry: Retries | None = None
    backoff: BackoffSpec | None = None


class StepSpec(_Spec):
    name: Identifier
    normal: PhaseSpec
    rollback: PhaseSpec | None = None  # left out: nothing to undo, passed over while rolling back


class TaskTypeSpec(_Spec):
    description: str = ""
    # Opaque for now: a later issue defines a schema for a task type's parameters. Until then
    # any mapping is accepted and handed on unchanged.
    parameters: dict[str, Any] = Field(default_factory=dict)
    steps: list[StepSpec] = Field(min_length=1)


class FlowsFile(_Spec):
    version: int
    defaults: DefaultsSpec | None = None
    task_types: dict[Identifier, TaskTypeSpec] = Field(min_length=1)

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value != 1:
            raise ValueError(f"must be 1, the only version of this format (got {value})")
        return value
