"""Checks of the `lock_modes` table and of each lock's `mode:` that the schema cannot express.

The table is square and symmetric: every declared mode's row names every declared mode, and
`a.b` equals `b.a`. A hole or a mismatch is refused rather than guessed: a guess that lets two
modes share a key the author meant to keep apart runs two tasks on one resource at once.
`exclusive` is built in (the mode of a lock that names none) and is not declared; a lock's
`mode:` names it or a declared mode. The schema reports wrong types; these read the raw data
and skip what is not a mapping, so every problem shows at once.
"""

from __future__ import annotations

from typing import Any

from common.engine.views import EXCLUSIVE
from common.spec.problems import describe
from common.spec.problems import Path, Problem, at
from common.spec.problems import Lines

_TABLE: Path = ("lock_modes",)


def lock_mode_checks(data: dict[str, Any], lines: Lines) -> list[Problem]:
    table = data.get("lock_modes")
    table = table if isinstance(table, dict) else {}
    return _table(table, lines) + _modes_named(data, set(table) | {EXCLUSIVE}, lines)


def _table(table: dict[str, Any], lines: Lines) -> list[Problem]:
    problems: list[Problem] = []
    declared = sorted(table)
    if EXCLUSIVE in table:
        problems.append(at(lines.key(_TABLE + (EXCLUSIVE,)), _TABLE + (EXCLUSIVE,),
                           f"{EXCLUSIVE} is built in (it shares a key with no other mode): declare modes of your own"))
    for mode, row in table.items():
        if not isinstance(row, dict):
            continue  # the schema reports it
        path = _TABLE + (mode,)
        for other in row:
            if other == EXCLUSIVE and mode != EXCLUSIVE:
                problems.append(at(lines.key(path + (other,)), path + (other,),
                                   f"{EXCLUSIVE} shares a key with no declared mode: leave it out of the table"))
            elif other not in table:
                problems.append(at(lines.key(path + (other,)), path + (other,),
                                   f"unknown mode {describe(other)} (declared modes: {', '.join(declared)})"))
        missing = [m for m in declared if m not in row and m != EXCLUSIVE]
        if missing:
            problems.append(at(lines.key(path), path, "says nothing about " + ", ".join(missing) +
                               ": give each declared mode true (may share a key) or false"))
        problems += _asymmetric(table, mode, row, lines)
    return problems


def _asymmetric(table: dict[str, Any], mode: str, row: dict[str, Any], lines: Lines) -> list[Problem]:
    """Each mismatched pair once, at the later of its two cells in the table's order."""
    problems = []
    order = list(table)
    for other, shared in row.items():
        back = table.get(other)
        if not isinstance(back, dict) or mode not in back or other == mode or order.index(other) > order.index(mode):
            continue
        if isinstance(shared, bool) and isinstance(back[mode], bool) and shared != back[mode]:
            path = _TABLE + (mode, other)
            problems.append(at(lines.value(path), path, f"is {_yaml(shared)} but lock_modes.{other}.{mode} is "
                               f"{_yaml(back[mode])}: whether two modes share a key reads the same both ways"))
    return problems


def _modes_named(data: dict[str, Any], known: set[str], lines: Lines) -> list[Problem]:
    problems: list[Problem] = []
    task_types = data.get("task_types")
    for type_name, task_type in (task_types if isinstance(task_types, dict) else {}).items():
        if not isinstance(task_type, dict):
            continue
        base: Path = ("task_types", type_name)
        places = [(task_type.get("lock"), base + ("lock",))]
        steps = task_type.get("steps")
        places += [(step.get("lock"), base + ("steps", i, "lock")) for i, step in
                   enumerate(steps if isinstance(steps, list) else []) if isinstance(step, dict)]
        for lock, path in places:
            mode = lock.get("mode") if isinstance(lock, dict) else None
            if isinstance(mode, str) and mode not in known:
                modes = ", ".join(sorted(known))
                problems.append(at(lines.value(path + ("mode",)), path + ("mode",),
                                   f"unknown mode {describe(mode)} (known modes: {modes}; declare it in lock_modes)"))
    return problems


def _yaml(value: bool) -> str:
    return "true" if value else "false"
