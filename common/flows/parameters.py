"""A task type's parameter schema, and the check of a job's parameters against it.

Pure functions, no I/O. A check answers every problem at once as (path, message) pairs and fills
in defaults. No message about a job's parameters carries the value it refuses (an API answers
these messages to the caller verbatim, and logs may record them); flows.yaml's own defaults and
choices are shown, but never a secret one's, nor one whose name looks secret
(common.secrets.names.SECRET_KEY).

Semantics worth knowing:
- `pattern` must match the WHOLE value (re.fullmatch), as an HTML form's pattern does: a pattern
  written without anchors is not silently a substring search, and `$` cannot let a trailing
  newline through.
- An integer parameter takes 3 and 3.0 (JSON cannot tell them apart); it is stored as 3.
- null is a value like any other: it fits no type, so it is reported, never taken as "missing".
- Keys starting with `_baton_` are reserved for baton: never declared, and refused from a
  client, except `_baton_faults` (fault injection in tests and drills), always accepted.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.reserved import RESERVED_PREFIX
from common.spec.problems import format_path
from common.secrets.scrubber import MASK
from common.secrets.names import SECRET_KEY
from common.secrets.documents import mask_secrets

CLIENT_RESERVED = ("_baton_faults",)  # the reserved names a client may send (common.runtime.faults)
RESERVED_MESSAGE = f"names starting with {RESERVED_PREFIX} are reserved for baton"


def reserved_name(name: str) -> bool:
    """A parameter name baton keeps for itself: refused in a client's parameters."""
    return name.startswith(RESERVED_PREFIX) and name not in CLIENT_RESERVED
_SHOWN_CHARS = 60  # a value shown in a message is cut to this many characters
_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "an array",
}


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True)
class FieldError:
    """One problem with a request: `path` like "parameters.cpu", `message` in plain words."""

    path: str
    message: str


@dataclass(frozen=True)
class ParameterField:
    name: str
    type: str
    required: bool = False
    default: Any = NO_DEFAULT
    description: str = ""
    minimum: int | float | None = None
    maximum: int | float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    enum: tuple[Any, ...] | None = None
    secret: bool = False

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    @property
    def hides_value(self) -> bool:
        return self.secret or SECRET_KEY.search(self.name) is not None

    def describe(self) -> dict[str, Any]:
        """The declaration as JSON-able data, a secret's default and choices masked."""
        shown: dict[str, Any] = {"type": self.type, "required": self.required}
        if self.has_default:
            shown["default"] = MASK if self.hides_value else self.default
        for key in ("description", "minimum", "maximum", "min_length", "max_length", "pattern"):
            value = getattr(self, key)
            if value not in (None, ""):
                shown[key] = value
        if self.enum is not None:
            shown["enum"] = [MASK] * len(self.enum) if self.hides_value else list(self.enum)
        shown["secret"] = self.secret
        return shown


@dataclass(frozen=True)
class ParameterSchema:
    fields: tuple[ParameterField, ...]

    def field(self, name: str) -> ParameterField | None:
        return next((f for f in self.fields if f.name == name), None)

    @property
    def secret_names(self) -> list[str]:
        return [f.name for f in self.fields if f.secret]

    def describe(self) -> dict[str, dict[str, Any]]:
        return {f.name: f.describe() for f in self.fields}


@dataclass(frozen=True)
class ParameterCheck:
    parameters: dict[str, Any]  # the input with defaults filled in (meaningful when ok)
    errors: tuple[FieldError, ...]

    @property
    def ok(self) -> bool:
        return not self.errors


def validate_parameters(
    schema: ParameterSchema | None, parameters: Mapping[str, Any], prefix: str = "parameters"
) -> ParameterCheck:
    """Check `parameters` against `schema` (None: a task type that accepts anything)."""
    reserved = [_error(prefix, name, RESERVED_MESSAGE) for name in parameters if reserved_name(name)]
    if schema is None:
        return ParameterCheck(dict(parameters), tuple(reserved))
    result: dict[str, Any] = {}
    errors: list[FieldError] = reserved
    declared = ", ".join(f.name for f in schema.fields) or "none"
    for name, value in parameters.items():
        field = schema.field(name)
        if field is None:
            if name in CLIENT_RESERVED:
                result[name] = value
            elif reserved_name(name):
                pass  # reported above
            else:
                errors.append(_error(prefix, name, f"unknown parameter (declared: {declared})"))
            continue
        problem, value = check_value(field, value)
        if problem:
            errors.append(_error(prefix, name, problem))
        result[name] = value
    for field in schema.fields:
        if field.name in parameters:
            continue
        if field.has_default:
            result[field.name] = copy.deepcopy(field.default)
        elif field.required:
            errors.append(_error(prefix, field.name, "required parameter is missing"))
    return ParameterCheck(result, tuple(errors))


def check_value(field: ParameterField, value: Any, *, use_enum: bool = True, echo: bool = False) -> tuple[str, Any]:
    """("", normalised value) when `value` fits `field`, else (why not, value). `echo`: the
    message shows the value (flows.yaml's own, never a client's: a refused value is not echoed)."""
    if not _has_type(field.type, value):
        return f"must be {_TYPE_WORDS[field.type]} (got {_json_type(value)})", value
    if field.type == "integer":
        value = int(value)
    got = f" (got {_shown(value)})" if echo and not field.hides_value else ""
    if use_enum and field.enum is not None and not any(_same(value, c) for c in field.enum):
        choices = "the allowed values" if field.hides_value else ", ".join(map(_shown, field.enum))
        return f"must be one of {choices}{got}", value
    if field.minimum is not None and value < field.minimum:
        return f"must be >= {_shown(field.minimum)}{got}", value
    if field.maximum is not None and value > field.maximum:
        return f"must be <= {_shown(field.maximum)}{got}", value
    if field.type != "string":
        return "", value
    length = "" if field.hides_value else f" (got {len(value)})"
    if field.min_length is not None and len(value) < field.min_length:
        return f"must be at least {field.min_length} characters long{length}", value
    if field.max_length is not None and len(value) > field.max_length:
        return f"must be at most {field.max_length} characters long{length}", value
    if field.pattern is not None and re.fullmatch(field.pattern, value) is None:
        return f"must match the pattern {field.pattern}{got}", value
    return "", value


def _has_type(kind: str, value: Any) -> bool:
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):  # bool is an int to Python, never to a JSON schema
        return False
    if kind == "integer":
        if isinstance(value, float):
            return math.isfinite(value) and value.is_integer()
        return isinstance(value, int)
    if kind == "number":
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    if kind == "string":
        return isinstance(value, str)
    if kind == "object":
        return isinstance(value, dict)
    return isinstance(value, list)  # "array"


def _same(value: Any, choice: Any) -> bool:
    # 1 == True to Python; an enum of [1, 2] must not accept true, nor [true] accept 1.
    if isinstance(value, bool) or isinstance(choice, bool):
        return type(value) is type(choice) and value == choice
    return bool(value == choice)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number" if math.isfinite(value) else "a non-finite number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _shown(value: Any) -> str:
    value = mask_secrets(value)  # a refused plain value may still hold a URL password or a secret key
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def _error(prefix: str, name: str, message: str) -> FieldError:
    path = format_path((prefix, name))
    if len(path) > 200:  # a 1 MB key name is not worth echoing in full
        path = path[:199] + "…"
    return FieldError(path, message)
