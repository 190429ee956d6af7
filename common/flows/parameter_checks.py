"""Checks of `parameters:` declarations that span several keys: names, keys that fit the type,
bounds in order, and defaults and enum choices that fit their own declaration.

Like checks.py they read the raw data, so they report alongside every other problem; a
declaration the schema rejects is skipped here (the schema reports it).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from common.flows.build import parameter_field
from common.spec.problems import describe
from common.reserved import RESERVED_PREFIX
from common.flows.parameters import ParameterField, check_value
from common.spec.problems import Path, Problem, at
from common.flows.schema import ParameterSpec
from common.spec.problems import Lines

PARAMETER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYS_FOR = {
    "minimum": ("integer", "number"),
    "maximum": ("integer", "number"),
    "min_length": ("string",),
    "max_length": ("string",),
    "pattern": ("string",),
}


def parameter_checks(data: dict[str, Any], lines: Lines) -> list[Problem]:
    problems: list[Problem] = []
    task_types = data.get("task_types")
    for type_name, task_type in (task_types if isinstance(task_types, dict) else {}).items():
        declared = task_type.get("parameters") if isinstance(task_type, dict) else None
        if not isinstance(declared, dict):
            continue
        for name, raw in declared.items():
            path: Path = ("task_types", type_name, "parameters", name)
            problems += _name(name, path, lines)
            if not isinstance(raw, dict):
                continue
            try:
                spec = ParameterSpec.model_validate(raw)
            except ValidationError:
                continue
            field = parameter_field(name, spec)
            problems += _keys_fit_type(raw, field, path, lines)
            problems += _in_order(raw, "minimum", "maximum", path, lines)
            problems += _in_order(raw, "min_length", "max_length", path, lines)
            problems += _default_fits(raw, field, path, lines)
            problems += _choices_fit(field, path, lines)
    return problems


def _name(name: str, path: Path, lines: Lines) -> list[Problem]:
    if name.startswith(RESERVED_PREFIX):
        message = f"names starting with {RESERVED_PREFIX} are reserved for baton"
    elif not PARAMETER_NAME.fullmatch(name):
        message = f"must be a name: a letter or _ first, then letters, digits or _ (got {describe(name)})"
    else:
        return []
    return [at(lines.key(path), path, message)]


def _keys_fit_type(
    raw: dict[str, Any], field: ParameterField, path: Path, lines: Lines
) -> list[Problem]:
    problems = []
    for key, types in _KEYS_FOR.items():
        if key in raw and field.type not in types:
            kinds = " and ".join(types)
            message = f"applies to {kinds} parameters only (this one is {field.type})"
            problems.append(at(lines.key(path + (key,)), path + (key,), message))
    return problems


def _in_order(raw: dict[str, Any], low: str, high: str, path: Path, lines: Lines) -> list[Problem]:
    if raw.get(low) is None or raw.get(high) is None or raw[high] >= raw[low]:
        return []
    message = f"must be >= {low} (got {describe(raw[high])}; {low} is {describe(raw[low])})"
    return [at(lines.value(path + (high,)), path + (high,), message)]


def _default_fits(
    raw: dict[str, Any], field: ParameterField, path: Path, lines: Lines
) -> list[Problem]:
    if not field.has_default:
        return []
    where = path + ("default",)
    if field.required:
        message = "a required parameter takes no default: remove `required: true` or the default"
        return [at(lines.key(where), where, message)]
    problem, _ = check_value(field, field.default, echo=True)
    return [at(lines.value(where), where, f"does not fit the declaration: {problem}")] if problem else []


def _choices_fit(field: ParameterField, path: Path, lines: Lines) -> list[Problem]:
    problems = []
    for index, choice in enumerate(field.enum or ()):
        problem, _ = check_value(field, choice, use_enum=False, echo=True)
        if problem:
            where = path + ("enum", index)
            problems.append(at(lines.value(where), where, problem))
    return problems
