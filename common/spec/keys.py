"""A block of flows.yaml keys as a strict model, and the types their values take.

Strict on purpose: `timeout: "10"` or `retry: true` is a mistake to report, not to coerce. An
optional key is left out to take its default; an empty value (`timeout:`) is an error, because it
is far more often a forgotten value than a wish for the default. The blocks here are those more
than one part of the file takes: a phase's command and its backoff (a step, the `defaults`), a
lock (a task type, a step).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationInfo, field_validator


# Task type, step, module and command names. Module names become RabbitMQ queue names.
IDENTIFIER_PATTERN = r"^[a-z][a-z0-9_]*$"
Identifier = Annotated[str, StringConstraints(pattern=IDENTIFIER_PATTERN)]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]  # strict float takes ints, not bools
Retries = Annotated[int, Field(ge=0)]


class Spec(BaseModel):
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


class BackoffSpec(Spec):
    """Delay before retry n: min(max, initial * multiplier**(n-1)), spread by +- jitter."""

    initial: Seconds | None = None
    max: Seconds | None = None  # checked against initial after merging with defaults (flows/checks.py)
    multiplier: Annotated[float, Field(ge=1, allow_inf_nan=False)] | None = None
    jitter: Annotated[float, Field(ge=0, lt=1)] | None = None


class PhaseSpec(Spec):
    """How to run one phase (normal or rollback) of a step: which module's command, and limits."""

    module: Identifier
    command: Identifier
    timeout: Seconds | None = None
    retry: Retries | None = None
    backoff: BackoffSpec | None = None


class LockSpec(Spec):
    """At most `limit` tasks whose rendered `key` is the same run at once; the rest wait in line.
    The key's `{name}` placeholders must be declared parameters (the lock's checks)."""

    key: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    limit: Annotated[int, Field(ge=1)] = 1
    # Left out: exclusive. Otherwise a mode of the file's `lock_modes` table (flows/lock_mode_checks.py).
    mode: Identifier | None = None
