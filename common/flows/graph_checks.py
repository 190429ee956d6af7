"""Checks of a flow's graph (DESIGN.md sec. 3): `after`, `for_each`, sub-flows (`flow`, `inputs`).

They read the raw data, like checks.py, so they report alongside every other problem; values of
the wrong type are skipped (the schema reports those). Each problem points at the line and path
of the value at fault.
"""

from __future__ import annotations

from typing import Any

from common.flows.messages import describe
from common.flows.problems import Path, Problem, at
from common.flows.secrecy import secret_name, secret_source
from common.flows.yaml_source import Lines

# What a `for_each` sub-flow step's inputs may name besides the parent's parameters: its item.
ITEM_SOURCES = ("item", "item_index")


def graph_checks(data: dict[str, Any], lines: Lines) -> list[Problem]:
    task_types = _mapping(data.get("task_types"))
    problems: list[Problem] = []
    for type_name, raw in task_types.items():
        task_type = _mapping(raw)
        steps = task_type.get("steps")
        if not isinstance(steps, list):
            continue
        base: Path = ("task_types", type_name, "steps")
        names = [_mapping(s).get("name") for s in steps]
        declared = _mapping(task_type.get("parameters")) if "parameters" in task_type else None
        for index, raw_step in enumerate(steps):
            if not isinstance(raw_step, dict):
                continue  # the schema reports it
            step, path = raw_step, base + (index,)
            problems += _shape(step, path, lines)
            problems += _after(step, path, names, index, lines)
            problems += _for_each(step, path, declared, lines)
            problems += _sub_flow(step, path, task_types, declared, names, lines)
        problems += _cycles(steps, base, names, lines)
    return problems + _flow_cycles(task_types, lines)


def _shape(step: dict[str, Any], path: Path, lines: Lines) -> list[Problem]:
    if "flow" in step:
        return [at(lines.key(path + (key,)), path + (key,), "a sub-flow step (flow) runs no command of its own: "
                "remove it (the child task's steps do the work and roll it back)")
                for key in ("normal", "rollback", "max_wait") if key in step]
    if "normal" not in step:
        return [at(lines.value(path), path + ("normal",), "required key is missing")]
    return [at(lines.key(path + ("inputs",)), path + ("inputs",), "inputs are for a sub-flow step: add `flow`")] \
        if "inputs" in step else []


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


def _for_each(step: dict[str, Any], path: Path, declared: dict[str, Any] | None, lines: Lines) -> list[Problem]:
    problems = []
    for limit in ("max_parallel", "max_items"):
        if limit in step and "for_each" not in step:
            where = path + (limit,)
            problems.append(at(lines.key(where), where, f"{limit} limits a for_each step: add for_each"))
    name = step.get("for_each")
    if not isinstance(name, str):
        return problems
    where = path + ("for_each",)
    declaration = _mapping(declared).get(name) if declared is not None else None
    if declared is None:
        problems.append(at(lines.value(where), where, f"parameter {describe(name)} is not declared: "
                           "declare it under the task type's parameters with type: array"))
    elif declaration is None:
        problems.append(at(lines.value(where), where, f"unknown parameter {describe(name)} "
                           f"(declared: {', '.join(declared) or 'none'})"))
    elif _mapping(declaration).get("type") != "array":
        kind = _mapping(declaration).get("type")
        problems.append(at(lines.value(where), where, f"parameter {describe(name)} must be declared "
                           f"type: array to fan out over it (it is {describe(kind)})"))
    return problems


def _sub_flow(step: dict[str, Any], path: Path, task_types: dict[str, Any], declared: dict[str, Any] | None,
              names: list[Any], lines: Lines) -> list[Problem]:
    flow = step.get("flow")
    if not isinstance(flow, str):
        return []
    where = path + ("flow",)
    if flow not in task_types:
        known = ", ".join(task_types)
        return [at(lines.value(where), where, f"unknown task type {describe(flow)} (task types: {known})")]
    child = _mapping(task_types[flow])
    child_params = _mapping(child.get("parameters")) if "parameters" in child else None
    inputs = _mapping(step.get("inputs"))
    problems = []
    for child_name, parent_name in inputs.items():
        key = path + ("inputs", child_name)
        if child_params is not None and child_name not in child_params:
            problems.append(at(lines.key(key), key, f"task type {describe(flow)} declares no parameter "
                               f"{describe(child_name)} (declared: {', '.join(child_params) or 'none'})"))
        supplied = (declared is None or parent_name in declared or parent_name in names
                    or ("for_each" in step and parent_name in ITEM_SOURCES))
        if isinstance(parent_name, str) and not supplied:
            problems.append(at(lines.value(key), key, f"the parent cannot supply {describe(parent_name)}: "
                               "it is neither a declared parameter nor a step's name"))
        elif (child_params is not None and child_name in child_params and secret_source(parent_name, step, declared)
              and not secret_name(child_name, child_params)):
            # The child would show it in clear: its own views, events and webhooks know only its
            # own declarations. (A child without `parameters:` takes the secrecy along instead.)
            problems.append(at(lines.value(key), key, f"maps secret {describe(parent_name)} to {describe(child_name)}, "
                               f"which task type {describe(flow)} does not declare secret: add `secret: true` there"))
    for name, raw in (child_params or {}).items():
        spec = _mapping(raw)
        if spec.get("required") is True and "default" not in spec and name not in inputs:
            problems.append(at(lines.value(where), where, f"task type {describe(flow)} requires parameter "
                               f"{describe(name)}: map it under inputs"))
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
    cycle = _find_cycle(edges)
    if cycle is None:
        return []
    where = base + (cycle[0], "after")
    loop = " -> ".join(str(names[i]) for i in cycle + [cycle[0]])
    return [at(lines.value(where), where, f"the steps wait for each other in a cycle: {loop} (each waits for the next)")]


def _flow_cycles(task_types: dict[str, Any], lines: Lines) -> list[Problem]:
    """A task type that runs itself through sub-flows, directly or through others."""
    names = list(task_types)
    calls: list[list[int]] = []
    where_called: dict[tuple[int, int], Path] = {}
    for index, name in enumerate(names):
        targets = []
        steps = _mapping(task_types[name]).get("steps")
        for position, raw in enumerate(steps if isinstance(steps, list) else []):
            flow = _mapping(raw).get("flow")
            if isinstance(flow, str) and flow in task_types:
                targets.append(names.index(flow))
                where_called.setdefault((index, names.index(flow)), ("task_types", name, "steps", position, "flow"))
        calls.append(targets)
    cycle = _find_cycle(calls)
    if cycle is None:
        return []
    where = where_called[(cycle[0], cycle[1 % len(cycle)])]
    loop = " -> ".join(names[i] for i in cycle + [cycle[0]])
    return [at(lines.value(where), where, f"a sub-flow includes itself: {loop}")]


def _find_cycle(edges: list[list[int]]) -> list[int] | None:
    """A cycle in the graph i -> edges[i], as a list of nodes, or None (iterative DFS)."""
    colour = [0] * len(edges)  # 0 new, 1 on the current path, 2 done
    for root in range(len(edges)):
        if colour[root]:
            continue
        path, stack = [root], [iter(edges[root])]
        colour[root] = 1
        while stack:
            node = next(stack[-1], None)
            if node is None:
                colour[path.pop()] = 2
                stack.pop()
            elif colour[node] == 1:
                return path[path.index(node):]
            elif colour[node] == 0:
                colour[node] = 1
                path.append(node)
                stack.append(iter(edges[node]))
    return None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
