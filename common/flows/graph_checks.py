"""Checks of a flow's steps (docs/design/graph-and-routing.md, "The flow graph"): `after` and its
cycles here; the keys each kind of step and each gate owns (`for_each`, a sub-flow's `flow` and
`inputs`, a command's `normal`, a lock) by their parts (common.engine.registry.flows_parts).

They read the raw data, like checks.py, so they report alongside every other problem; values of
the wrong type are skipped (the schema reports those). Each problem points at the line and path
of the value at fault.
"""

from __future__ import annotations

from typing import Any

from common.engine.registry import flows_parts
from common.spec.parts import StepContext, find_cycle
from common.spec.problems import Lines, Path, Problem, at, describe


def graph_checks(data: dict[str, Any], lines: Lines) -> list[Problem]:
    task_types = _mapping(data.get("task_types"))
    parts = flows_parts()
    no_command_keys = frozenset(p.declared_by for p in parts if p.runs_no_command and p.declared_by)
    problems: list[Problem] = []
    for type_name, raw in task_types.items():
        task_type = _mapping(raw)
        problems += [p for part in parts for p in part.check_task(task_type, ("task_types", type_name), lines)]
        steps = task_type.get("steps")
        if not isinstance(steps, list):
            continue
        base: Path = ("task_types", type_name, "steps")
        names = [_mapping(s).get("name") for s in steps]
        context = StepContext(task_types, type_name, task_type, names, no_command_keys)
        for index, raw_step in enumerate(steps):
            if not isinstance(raw_step, dict):
                continue  # the schema reports it
            step, path = raw_step, base + (index,)
            problems += _after(step, path, names, index, lines)
            for part in parts:  # each kind's and gate's own keys (a for_each list, a child, a lock)
                problems += part.check_step(step, path, context, lines)
        problems += _cycles(steps, base, names, lines)
    return problems + [p for part in parts for p in part.check_file(data, lines)]


def _after(step: dict[str, Any], path: Path, names: list[Any], index: int, lines: Lines) -> list[Problem]:
    after = step.get("after")
    if not isinstance(after, list):
        return []
    problems, seen = [], set()
    for position, name in enumerate(after):
        where = path + ("after", position)
        if not isinstance(name, str):
            continue
        if name in seen:
            problems.append(at(lines.value(where), where, f"step {describe(name)} is listed twice"))
        elif name not in names:
            known = ", ".join(str(n) for n in names if isinstance(n, str))
            problems.append(at(lines.value(where), where, f"unknown step {describe(name)} (steps: {known})"))
        elif name == names[index]:
            problems.append(at(lines.value(where), where, "a step cannot wait for itself"))
        seen.add(name)
    return problems


def _cycles(steps: list[Any], base: Path, names: list[Any], lines: Lines) -> list[Problem]:
    """Report each cycle of `after` once, at the step that closes it, naming every step in it."""
    index_of = {n: i for i, n in enumerate(names) if isinstance(n, str)}
    edges: list[list[int]] = []
    for index, raw in enumerate(steps):
        after = _mapping(raw).get("after")
        if isinstance(after, list):
            edges.append([index_of[n] for n in after if isinstance(n, str) and n in index_of and index_of[n] != index])
        else:
            edges.append([index - 1] if index else [])
    cycle = find_cycle(edges)
    if cycle is None:
        return []
    where = base + (cycle[0], "after")
    loop = " -> ".join(str(names[i]) for i in cycle + [cycle[0]])
    return [at(lines.value(where), where, f"the steps wait for each other in a cycle: {loop} (each waits for the next)")]


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
