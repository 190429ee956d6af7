"""A sub-flow step's part of flows.yaml: `flow` (the child's task type, whose presence declares the
step's kind) and `inputs` (child parameter: the parent's), their checks (the child type exists,
the inputs are supplied and keep a secret secret, no type runs itself), and the step's fields:
the child's template, built first."""

from __future__ import annotations

from typing import Any

from common.spec.keys import Identifier
from common.spec.parts import BuildContext, FlowsPart, StepContext, find_cycle, mapping
from common.spec.problems import Lines, Path, Problem, at, describe
from common.secrets.names import secret_name, secret_source

# What a `for_each` sub-flow step's inputs may name besides the parent's parameters: its item.
ITEM_SOURCES = ("item", "item_index")


class SubFlowPart(FlowsPart):
    step_keys = {
        "flow": (Identifier | None, None),  # a sub-flow: runs a child task of this type
        "inputs": (dict[Identifier, Identifier] | None, None),  # child parameter: parent parameter
    }
    declared_by = "flow"
    runs_no_command = True

    def check_step(self, step: dict[str, Any], path: Path, context: StepContext, lines: Lines) -> list[Problem]:
        if "flow" in step:
            return [at(lines.key(path + (key,)), path + (key,), "a sub-flow step (flow) runs no command of its own: "
                    "remove it (the child task's steps do the work and roll it back)")
                    for key in ("normal", "rollback", "max_wait") if key in step] + _child(step, path, context, lines)
        if "normal" in step and "inputs" in step:
            return [at(lines.key(path + ("inputs",)), path + ("inputs",), "inputs are for a sub-flow step: add `flow`")]
        return []

    def check_file(self, data: dict[str, Any], lines: Lines) -> list[Problem]:
        """A task type that runs itself through sub-flows, directly or through others."""
        task_types = mapping(data.get("task_types"))
        names = list(task_types)
        calls: list[list[int]] = []
        where_called: dict[tuple[int, int], Path] = {}
        for index, name in enumerate(names):
            targets = []
            steps = mapping(task_types[name]).get("steps")
            for position, raw in enumerate(steps if isinstance(steps, list) else []):
                flow = mapping(raw).get("flow")
                if isinstance(flow, str) and flow in task_types:
                    targets.append(names.index(flow))
                    where_called.setdefault((index, names.index(flow)), ("task_types", name, "steps", position, "flow"))
            calls.append(targets)
        cycle = find_cycle(calls)
        if cycle is None:
            return []
        where = where_called[(cycle[0], cycle[1 % len(cycle)])]
        loop = " -> ".join(names[i] for i in cycle + [cycle[0]])
        return [at(lines.value(where), where, f"a sub-flow includes itself: {loop}")]

    def step_fields(self, spec: Any, build: BuildContext) -> dict[str, Any]:
        if spec.flow is None:
            return {}
        return {"Flow": spec.flow, "FlowInputs": dict(spec.inputs or {}), "FlowTemplate": build.child_template(spec.flow)}


def _child(step: dict[str, Any], path: Path, context: StepContext, lines: Lines) -> list[Problem]:
    flow = step.get("flow")
    if not isinstance(flow, str):
        return []
    where = path + ("flow",)
    task_types, declared = context.task_types, context.declared
    if flow not in task_types:
        known = ", ".join(task_types)
        return [at(lines.value(where), where, f"unknown task type {describe(flow)} (task types: {known})")]
    child = mapping(task_types[flow])
    child_params = mapping(child.get("parameters")) if "parameters" in child else None
    inputs = mapping(step.get("inputs"))
    problems = []
    for child_name, parent_name in inputs.items():
        key = path + ("inputs", child_name)
        if child_params is not None and child_name not in child_params:
            problems.append(at(lines.key(key), key, f"task type {describe(flow)} declares no parameter "
                               f"{describe(child_name)} (declared: {', '.join(child_params) or 'none'})"))
        supplied = (declared is None or parent_name in declared or parent_name in context.names
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
        spec = mapping(raw)
        if spec.get("required") is True and "default" not in spec and name not in inputs:
            problems.append(at(lines.value(where), where, f"task type {describe(flow)} requires parameter "
                               f"{describe(name)}: map it under inputs"))
    return problems
