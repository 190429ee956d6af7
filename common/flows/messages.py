"""Pydantic validation errors turned into flows.yaml problems: a path, a line and plain words."""

from __future__ import annotations

import difflib
import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from common.spec.problems import Lines, Path, Problem, at, describe

_TYPE_NAMES = {
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "text",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "list_type": "a list",
    "bool_type": "true or false",
}
_BOUNDS = {
    "greater_than": (">", "gt"),
    "greater_than_equal": (">=", "ge"),
    "less_than": ("<", "lt"),
    "less_than_equal": ("<=", "le"),
}


def schema_problems(error: ValidationError, root: type[BaseModel], lines: Lines) -> list[Problem]:
    return [_problem(details, root, lines) for details in error.errors(include_url=False)]


def _problem(details: ErrorDetails, root: type[BaseModel], lines: Lines) -> Problem:
    # A key that takes one of several forms (a tagged union) names the form in the path, as a
    # tag starting with "~": no key of the file, left out.
    loc: Path = tuple(part for part in details["loc"] if not (isinstance(part, str) and part.startswith("~")))
    if loc and loc[-1] == "[key]":  # a mapping key itself is wrong (a task type's name)
        path = loc[:-1]
        return at(lines.key(path), path, _message(details, root, path))
    if details["type"] == "missing":  # nothing to point at: point at the mapping that lacks it
        return at(lines.value(loc[:-1]), loc, "required key is missing")
    if details["type"] == "extra_forbidden":
        return at(lines.key(loc), loc, _unknown_key(root, loc))
    return at(lines.value(loc), loc, _message(details, root, loc))


def _message(details: ErrorDetails, root: type[BaseModel], path: Path) -> str:
    kind, value = details["type"], details["input"]
    context = details.get("ctx") or {}
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]} (got {describe(value)}{_hint(kind, value)})"
    if kind in _BOUNDS:
        operator, key = _BOUNDS[kind]
        return f"must be {operator} {describe(context[key])} (got {describe(value)})"
    if kind == "string_pattern_mismatch":
        return f"must be a lowercase name: a-z first, then a-z, 0-9 or _ (got {describe(value)})"
    if kind == "literal_error":
        return f"must be one of {context.get('expected')} (got {describe(value)})"
    if kind == "too_short":
        return "must not be empty"
    if kind == "finite_number":
        return f"must be a finite number (got {describe(value)})"
    if kind == "value_error":  # raised by our own validators, already worded for the user
        return str(context.get("error", details["msg"]))
    text = details["msg"]  # a case the table above misses: pydantic's words are still clear
    return text[:1].lower() + text[1:]


def _hint(kind: str, value: Any) -> str:
    if kind in ("int_type", "float_type") and isinstance(value, str) and _is_number_text(value):
        return "; remove the quotes"
    if kind == "string_type" and isinstance(value, bool):
        return "; YAML reads yes/no/on/off as true/false: quote it"
    return ""


def _is_number_text(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _unknown_key(root: type[BaseModel], loc: Path) -> str:
    model = _model_at(root, loc[:-1])
    allowed = list(model.model_fields) if model else []
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
    guess = f"did you mean {describe(close[0])}? " if close else ""
    return f"unknown key; {guess}allowed keys here: {', '.join(allowed)}"


def _model_at(root: type[BaseModel], loc: Path) -> type[BaseModel] | None:
    """The model that validates the mapping at `loc`, found by walking the field annotations."""
    annotation: Any = root
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(part) if isinstance(part, str) else None
            if field is None:
                return None
            annotation = field.annotation
        elif get_origin(annotation) in (list, dict):
            annotation = get_args(annotation)[-1]  # the item type, or the value type
        else:
            return None
    annotation = _unwrap(annotation)
    return (
        annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    )


def _unwrap(annotation: Any) -> Any:
    """X | None -> X; Annotated[X, ...] -> X."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):  # X | None, or a key of several forms: its mapping's
            args = [arg for arg in get_args(annotation) if arg is not type(None)]
            models = [arg for arg in args if isinstance(_unwrap(arg), type) and issubclass(_unwrap(arg), BaseModel)]
            annotation = (models or args)[0]
        else:
            return annotation
