"""Checks that span several values, which the per-field schema cannot express.

They read the raw data rather than the validated models, so they still report when another part
of the file is broken: the user sees every problem at once. Values of the wrong type are skipped
here; the schema reports those.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from typing import Any, TypeGuard

from common.flows.freeze_checks import freeze_checks
from common.flows.graph_checks import graph_checks
from common.flows.lock_mode_checks import lock_mode_checks
from common.spec.problems import describe
from common.flows.parameter_checks import parameter_checks
from common.spec.problems import Path, Problem, at, format_path
from common.spec.keys import IDENTIFIER_PATTERN
from common.spec.problems import Lines
from common.engine.document import BackoffPolicy

KnownCommands = Mapping[str, Collection[str]]

# Where a backoff value comes from when a block leaves it out: (value, where it was written).
_Origin = dict[str, tuple[float, str]]
_BUILTIN_BACKOFF: _Origin = {
    "initial": (BackoffPolicy.model_fields["Initial"].default, "the built-in default"),
    "max": (BackoffPolicy.model_fields["Max"].default, "the built-in default"),
}
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)


def cross_checks(
    data: dict[str, Any], lines: Lines, known: KnownCommands | None, *, all_modules: bool = True
) -> list[Problem]:
    """`known`: module -> the commands it serves. `all_modules` False: it lists only some modules
    (one module checking its own commands at start-up), so other module names are not checked."""
    problems: list[Problem] = []
    defaults_backoff = _mapping(_mapping(data.get("defaults")).get("backoff"))
    problems += _backoff_order(defaults_backoff, ("defaults", "backoff"), _BUILTIN_BACKOFF, lines)
    inherited = _origins(defaults_backoff, ("defaults", "backoff"), _BUILTIN_BACKOFF)
    for name, task_type in _mapping(data.get("task_types")).items():
        steps = _mapping(task_type).get("steps")
        if not isinstance(steps, list):
            continue
        base: Path = ("task_types", name, "steps")
        problems += _duplicate_step_names(steps, base, lines)
        for index, step in enumerate(steps):
            for phase in ("normal", "rollback"):
                body, path = _mapping(_mapping(step).get(phase)), base + (index, phase)
                backoff = _mapping(body.get("backoff"))
                problems += _backoff_order(backoff, path + ("backoff",), inherited, lines)
                if known is not None:
                    problems += _known_command(body, path, known, all_modules, lines)
            over = _mapping(step).get("for_each")
            if known is not None and isinstance(over, dict):  # a source of items: a command of its module
                source = _mapping(over.get("source"))
                problems += _known_command(source, base + (index, "for_each", "source"), known, all_modules, lines)
    problems += freeze_checks(data, lines)
    return problems + parameter_checks(data, lines) + graph_checks(data, lines) + lock_mode_checks(data, lines)


def _duplicate_step_names(steps: list[Any], base: Path, lines: Lines) -> list[Problem]:
    problems: list[Problem] = []
    first: dict[str, int] = {}
    for index, step in enumerate(steps):
        name = _mapping(step).get("name")
        if not isinstance(name, str):
            continue
        if name in first:
            earlier = first[name]
            line = lines.value(base + (earlier, "name"))
            message = (
                f"duplicate step name {describe(name)}: steps[{earlier}] on line {line} has it"
            )
            problems.append(
                at(lines.value(base + (index, "name")), base + (index, "name"), message)
            )
        else:
            first[name] = index
    return problems


def _backoff_order(
    block: dict[str, Any], path: Path, inherited: _Origin, lines: Lines
) -> list[Problem]:
    """max >= initial, once the block is merged over what it inherits.

    Reported only where one of the two is written: a conflict between inherited values belongs
    to the block that wrote them, and is reported there once.
    """
    own = {key: value for key in ("initial", "max") if (value := _positive(block.get(key)))}
    if not own:
        return []
    effective = _origins(block, path, inherited)
    (initial, initial_from), (maximum, max_from) = effective["initial"], effective["max"]
    if maximum >= initial:
        return []
    if "max" in own:
        source = "" if "initial" in own else f", from {initial_from}"
        message = (
            f"must be >= initial (got {describe(maximum)}; initial is {describe(initial)}{source})"
        )
        return [at(lines.value(path + ("max",)), path + ("max",), message)]
    message = (
        f"must be <= max (got {describe(initial)}; max is {describe(maximum)}, from {max_from})"
    )
    return [at(lines.value(path + ("initial",)), path + ("initial",), message)]


def _origins(block: dict[str, Any], path: Path, inherited: _Origin) -> _Origin:
    result = dict(inherited)
    for key in ("initial", "max"):
        value = _positive(block.get(key))
        if value is not None:
            result[key] = (value, format_path(path + (key,)))
    return result


def _known_command(
    body: dict[str, Any], path: Path, known: KnownCommands, all_modules: bool, lines: Lines
) -> list[Problem]:
    module, command = body.get("module"), body.get("command")
    if not _is_identifier(module) or (module not in known and not all_modules):
        return []
    if module not in known:
        message = f"unknown module {describe(module)} (known modules: {_listing(known)})"
        return [at(lines.value(path + ("module",)), path + ("module",), message)]
    if _is_identifier(command) and command not in known[module]:
        served = _listing(known[module])
        message = (
            f"module {describe(module)} has no command {describe(command)} (it serves: {served})"
        )
        return [at(lines.value(path + ("command",)), path + ("command",), message)]
    return []


def _listing(names: Collection[str]) -> str:
    return ", ".join(sorted(names)) or "none"


def _is_identifier(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and _IDENTIFIER.fullmatch(value) is not None


def _positive(value: Any) -> float | None:
    """The value if it is a valid positive number, else None (the schema reports it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
