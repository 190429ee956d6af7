"""The flows.yaml format as pydantic models: the allowed keys, types and bounds of every value.

Strict on purpose: `timeout: "10"` or `retry: true` is a mistake to report, not to coerce. An
optional key is left out to take its default; an empty value (`timeout:`) is an error, because it
is far more often a forgotten value than a wish for the default.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from common.cron import CRON_PROBLEM, is_cron
from common.flows.freeze import DURATION_PROBLEM, parse_duration
from common.flows.messages import describe
from common.logging import redacted_url

# Task type, step, module and command names. Module names become RabbitMQ queue names.
IDENTIFIER_PATTERN = r"^[a-z][a-z0-9_]*$"
Identifier = Annotated[str, StringConstraints(pattern=IDENTIFIER_PATTERN)]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]  # strict float takes ints, not bools
Retries = Annotated[int, Field(ge=0)]

# What a phase gets when neither it nor `defaults` says. Backoff falls back field by field to
# common.engine.document.BackoffPolicy's defaults. No retry unless asked: a user opts into re-running.
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


class LockSpec(_Spec):
    """At most `limit` tasks whose rendered `key` is the same run at once; the rest wait in line.
    The key's `{name}` placeholders must be declared parameters (checked in lock_checks.py)."""

    key: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    limit: Annotated[int, Field(ge=1)] = 1
    # Left out: exclusive. Otherwise a mode of the file's `lock_modes` table (lock_mode_checks.py).
    mode: Identifier | None = None


class StepSpec(_Spec):
    """One step. `normal` is required unless the step is a sub-flow (`flow`); graph_checks.py
    checks that and the rules across steps and task types (names, cycles, lists)."""

    name: Identifier
    normal: PhaseSpec | None = None
    rollback: PhaseSpec | None = None  # left out: nothing to undo, passed over while rolling back
    # Left out: the step waits for the one before it (a line). `[]`: a root.
    after: list[Identifier] | None = None
    for_each: Identifier | None = None  # a parameter declared `type: array`
    max_parallel: Annotated[int, Field(ge=1)] | None = None  # items running at once
    # The longest list this step fans out over: a longer one is refused at submission (422) or,
    # grown by a step's output, fails this step when it opens (docs/limits.md).
    max_items: Annotated[int, Field(ge=1)] | None = None
    flow: Identifier | None = None  # a sub-flow: runs a child task of this type
    inputs: dict[Identifier, Identifier] | None = None  # child parameter: parent parameter
    # Seconds a phase may keep answering "check again later" in total; past it the unit fails
    # like a timeout. Left out: no bound.
    max_wait: Seconds | None = None
    lock: LockSpec | None = None  # each unit's normal phase holds this key (common/engine/gates/step_locks.py)


ParameterType = Literal["string", "integer", "number", "boolean", "object", "array"]
Length = Annotated[int, Field(ge=0)]


class ParameterSpec(_Spec):
    """One declared parameter of a task type. Which keys fit which type, and whether a default
    fits its own declaration, is checked across keys in parameter_checks.py."""

    type: ParameterType
    required: bool = False
    default: Any = None  # None: no default (`default:` left empty is reported, not taken as null)
    description: str = ""
    minimum: int | float | None = None  # an int stays an int, for display
    maximum: int | float | None = None
    min_length: Length | None = None
    max_length: Length | None = None
    pattern: str | None = None  # the whole value must match (re.fullmatch)
    enum: list[Any] | None = Field(None, min_length=1)
    secret: bool = False  # never shown: masked in API answers, CLI output and logs

    @field_validator("minimum", "maximum", mode="before")
    @classmethod
    def _finite_number(cls, value: Any) -> Any:
        # One message of ours instead of one per member of the int | float union.
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"must be a number (got {describe(value)})")
        if not math.isfinite(value):
            raise ValueError(f"must be a finite number (got {value})")
        return value

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as error:
            raise ValueError(f"not a valid regular expression: {error}") from None
        return value


NotifyEvent = Literal[
    "created", "restarted", "started", "succeeded", "rolling_back", "rolled_back", "rollback_failed", "cancelled",
    "waiting_for_lock",
]  # common.engine.notifications.EVENTS


class NotifySpec(_Spec):
    """A task type's webhook: its status changes POSTed to `url` (docs/guide/webhooks.md)."""

    url: Annotated[str, StringConstraints(max_length=2000)]
    events: list[NotifyEvent] | None = Field(None, min_length=1)  # left out: every event

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.fullmatch(r"https?://[^\s/?#]+\S*", value):
            # A URL may carry a password or a token: the error shows neither.
            raise ValueError(f"must be an http:// or https:// URL (got {describe(redacted_url(value))})")
        return value


class TaskTypeSpec(_Spec):
    description: str = ""
    # A name for this revision of the type ("2", "2026-11-rotate-fix"), recorded in each task
    # beside the content hash baton computes; optional.
    version: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")] | None = None
    lock: LockSpec | None = None  # a per-key lock taken before the first step
    # Left out: the task type takes any parameters. Given (even empty): only the declared ones,
    # plus the reserved `_baton_*` keys.
    parameters: dict[str, ParameterSpec] | None = None
    # Seconds the task has to finish, from its (delayed) start; past it, it rolls back (DESIGN.md 10).
    deadline: Seconds | None = None
    steps: list[StepSpec] = Field(min_length=1)
    notify: NotifySpec | None = None


class FreezeSpec(_Spec):
    """A freeze window (common/flows/freeze.py): from each cron tick, for `duration`, new tasks of
    `task_types` wait for its end or are refused. That each type exists: freeze_checks.py."""

    name: Identifier
    cron: str
    duration: float | str  # seconds, or "64h", "1h30m", ...
    timezone: str = "UTC"
    task_types: list[Identifier] = Field(min_length=1)
    policy: Literal["wait", "refuse"]
    description: str = ""

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        if not is_cron(value):
            raise ValueError(CRON_PROBLEM)
        return value

    @field_validator("duration")
    @classmethod
    def _duration(cls, value: float | str) -> float | str:
        if parse_duration(value) is None:
            raise ValueError(f"{DURATION_PROBLEM} (got {describe(value)})")
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name with NUL in it
            raise ValueError(f"is not a known time zone (IANA name, e.g. Europe/Paris; got {describe(value)})") from None
        return value


class FlowsFile(_Spec):
    version: int
    defaults: DefaultsSpec | None = None
    # Which lock modes share a key: a full square table of booleans, symmetric
    # (lock_mode_checks.py); `exclusive`, the mode of a lock naming none, is built in.
    lock_modes: dict[Identifier, dict[Identifier, bool]] | None = None
    task_types: dict[Identifier, TaskTypeSpec] = Field(min_length=1)
    freeze: list[FreezeSpec] | None = None  # windows in which new tasks wait or are refused

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value != 1:
            raise ValueError(f"must be 1, the only version of this format (got {value})")
        return value

