"""The flows.yaml format as pydantic models: the allowed keys, types and bounds of every value; a
step's keys are assembled from the parts of the kinds of step and the gates that own them.

Strict on purpose: `timeout: "10"` or `retry: true` is a mistake to report, not to coerce. An
optional key is left out to take its default; an empty value (`timeout:`) is an error, because it
is far more often a forgotten value than a wish for the default.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, StringConstraints, create_model, field_validator

from common.cron import CRON_PROBLEM, is_cron
from common.spec.durations import checked_duration
from common.engine.registry import flows_parts
from common.engine.views import EVENTS
from common.secrets.urls import redacted_url
from common.spec.keys import (
    IDENTIFIER_PATTERN, BackoffSpec, Identifier, LockSpec, PhaseSpec, Retries, Seconds, Spec,
)
from common.spec.problems import describe

__all__ = ["IDENTIFIER_PATTERN", "BackoffSpec", "DefaultsSpec", "FlowsFile", "FreezeSpec", "LockSpec", "NotifySpec",
           "ParameterSpec", "PhaseSpec", "StepSpec", "TaskTypeSpec"]

_Spec = Spec  # the strict model of a block of keys (common/spec/keys.py)


class DefaultsSpec(_Spec):
    timeout: Seconds | None = None
    retry: Retries | None = None  # retries after the first attempt
    backoff: BackoffSpec | None = None


class _StepCore(_Spec):
    name: Identifier
    # Left out: the step waits for the one before it (a line). `[]`: a root.
    after: list[Identifier] | None = None


# One step: its name and place in the graph, and the keys each kind of step and each gate owns
# (common.engine.registry.flows_parts: `normal`, `rollback`, `max_wait` a command's; `for_each`,
# `max_parallel`, `max_items` a for_each step's; `flow`, `inputs` a sub-flow's; `lock` a step
# lock's). The parts check what spans keys (`normal` is required unless the step names a flow).
StepSpec = create_model(
    "StepSpec", __base__=_StepCore, __module__=__name__,
    **{key: definition for part in flows_parts() for key, definition in part.step_keys.items()},
)


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


# Every event baton posts (common.engine.core.notifications.EVENTS): the task's and each kind of step's.
NotifyEvent = Literal[EVENTS]  # type: ignore[valid-type]


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


class _TaskTypeHead(_Spec):
    description: str = ""
    # A name for this revision of the type ("2", "2026-11-rotate-fix"), recorded in each task
    # beside the content hash baton computes; optional.
    version: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")] | None = None
    lock: LockSpec | None = None  # a per-key lock taken before the first step


_TASK_TYPE_TAIL: dict[str, Any] = {
    # Left out: the task type takes any parameters. Given (even empty): only the declared ones,
    # plus the reserved `_baton_*` keys.
    "parameters": (dict[str, ParameterSpec] | None, None),
    # Seconds the task has to finish, from its (delayed) start; past it, it rolls back
    # (docs/design/operations.md).
    "deadline": (Seconds | None, None),
    # What its for_each steps do at a failure past their budget, unless a step says: rollback
    # (the default) or hold (docs/fan-out.md, "Hold and redrive").
    "on_failure": (Literal["rollback", "hold"] | None, None),
    "steps": (list[StepSpec], Field(min_length=1)),
    "notify": (NotifySpec | None, None),
}
# A task type: its own keys, with the keys each gate owns on it after `lock` (their parts' `task_keys`:
# `rate`, at most `limit` starts per key in any `per` seconds, docs/design/rates.md).
TaskTypeSpec = create_model(
    "TaskTypeSpec", __base__=_TaskTypeHead, __module__=__name__,
    **{key: definition for part in flows_parts() for key, definition in part.task_keys.items()},
    **_TASK_TYPE_TAIL,
)


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

    _duration = field_validator("duration")(checked_duration)

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

