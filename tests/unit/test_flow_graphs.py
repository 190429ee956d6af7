"""flows.yaml graphs: `after`, `for_each` + `max_parallel`, sub-flows (`flow` + `inputs`), and the
exact "file:line: path: message" of every refusal (docs/design/graph-and-routing.md, "The flow
graph")."""

from __future__ import annotations

import pytest

from common.flows import parse_flows
from tests.unit.test_flows import problems

DIAMOND = """\
version: 1
task_types:
  t:
    parameters:
      hosts: {type: array, default: []}
      name: {type: string}
    steps:
      - name: a
        normal: {module: m, command: c}
      - name: b
        after: [a]
        normal: {module: m, command: c}
      - name: c
        after: [a]
        for_each: hosts
        max_parallel: 2
        normal: {module: m, command: c}
      - name: d
        after: [b, c]
        normal: {module: m, command: c}
"""


def test_after_becomes_indices_and_a_step_without_it_follows_the_one_before() -> None:
    steps = parse_flows(DIAMOND, "flows.yaml").get("t").steps
    assert [s.After for s in steps] == [[], [0], [0], [1, 2]]
    assert (steps[2].ForEach, steps[2].MaxParallel) == ("hosts", 2)
    line = parse_flows(DIAMOND.replace("        after: [a]\n", "", 1), "flows.yaml").get("t").steps
    assert line[1].After == [0]


def test_an_empty_after_makes_a_root() -> None:
    text = DIAMOND.replace("      - name: b\n        after: [a]", "      - name: b\n        after: []")
    assert parse_flows(text, "flows.yaml").get("t").steps[1].After == []


SUB = """\
version: 1
task_types:
  child:
    parameters:
      who: {type: string, required: true}
      level: {type: integer, default: 3}
      secret: {type: string, secret: true}
    steps:
      - name: x
        normal: {module: m, command: c}
        rollback: {module: m, command: u}
  parent:
    parameters:
      name: {type: string}
    steps:
      - name: first
        normal: {module: m, command: c}
      - name: sub
        flow: child
        inputs: {who: name}
"""


def test_a_sub_flow_step_carries_its_child_template() -> None:
    sub = parse_flows(SUB, "flows.yaml").get("parent").steps[1]
    assert (sub.Flow, sub.FlowInputs, sub.NormalModule, sub.has_rollback) == ("child", {"who": "name"}, None, True)
    assert sub.FlowTemplate is not None
    assert sub.FlowTemplate.TaskType == "child" and [s.Name for s in sub.FlowTemplate.Steps] == ["x"]
    assert sub.FlowTemplate.Defaults == {"level": 3} and sub.FlowTemplate.SecretParameters == ["secret"]


def test_a_for_each_sub_flow_loads_with_the_item_among_its_inputs() -> None:
    text = SUB.replace("      name: {type: string}\n", "      name: {type: string}\n      hosts: {type: array}\n")
    text = text.replace("        flow: child\n        inputs: {who: name}",
                        "        for_each: hosts\n        max_parallel: 2\n        flow: child\n        inputs: {who: item, level: item_index}")
    sub = parse_flows(text, "flows.yaml").get("parent").steps[1]
    assert (sub.ForEach, sub.MaxParallel, sub.Flow) == ("hosts", 2, "child")
    assert sub.FlowInputs == {"who": "item", "level": "item_index"}


def test_nested_sub_flows_load() -> None:
    text = SUB + "  grand:\n    steps:\n      - name: whole\n        flow: parent\n"
    grand = parse_flows(text, "flows.yaml").get("grand").steps[0]
    assert grand.FlowTemplate.Steps[1].FlowTemplate.TaskType == "child"


REFUSALS = {
    "unknown step in after": (
        DIAMOND.replace("after: [b, c]", "after: [b, z]"),
        ["flows.yaml:19: task_types.t.steps[3].after[1]: unknown step \"z\" (steps: a, b, c, d)"],
    ),
    "step listed twice in after": (
        DIAMOND.replace("after: [b, c]", "after: [b, b]"),
        ["flows.yaml:19: task_types.t.steps[3].after[1]: step \"b\" is listed twice"],
    ),
    "a step waiting for itself": (
        DIAMOND.replace("after: [b, c]", "after: [d]"),
        ["flows.yaml:19: task_types.t.steps[3].after[0]: a step cannot wait for itself"],
    ),
    "a cycle": (
        DIAMOND.replace("      - name: b\n        after: [a]", "      - name: b\n        after: [d]"),
        ["flows.yaml:11: task_types.t.steps[1].after: the steps wait for each other in a cycle: "
         "b -> d -> b (each waits for the next)"],
    ),
    "for_each on a parameter that is not a list": (
        DIAMOND.replace("for_each: hosts", "for_each: name"),
        ["flows.yaml:15: task_types.t.steps[2].for_each: parameter \"name\" must be declared type: array "
         "to fan out over it (it is \"string\")"],
    ),
    "for_each on an undeclared parameter": (
        DIAMOND.replace("for_each: hosts", "for_each: nodes"),
        ["flows.yaml:15: task_types.t.steps[2].for_each: unknown parameter \"nodes\" (declared: hosts, name)"],
    ),
    "for_each where nothing is declared": (
        DIAMOND.replace("    parameters:\n      hosts: {type: array, default: []}\n      name: {type: string}\n", ""),
        ["flows.yaml:12: task_types.t.steps[2].for_each: parameter \"hosts\" is not declared: declare it "
         "under the task type's parameters with type: array"],
    ),
    "max_parallel without for_each": (
        DIAMOND.replace("        for_each: hosts\n", ""),
        ["flows.yaml:15: task_types.t.steps[2].max_parallel: only a for_each step takes it: add for_each, or remove it"],
    ),
    "max_items without for_each": (
        DIAMOND.replace("        for_each: hosts\n        max_parallel: 2\n", "        max_items: 5\n"),
        ["flows.yaml:15: task_types.t.steps[2].max_items: only a for_each step takes it: add for_each, or remove it"],
    ),
    "max_items below 1": (
        DIAMOND.replace("max_parallel: 2", "max_parallel: 2\n        max_items: 0"),
        ["flows.yaml:17: task_types.t.steps[2].max_items: must be >= 1 (got 0)"],
    ),
    "max_items not a number": (
        DIAMOND.replace("max_parallel: 2", "max_parallel: 2\n        max_items: lots"),
        ["flows.yaml:17: task_types.t.steps[2].max_items: must be an integer (got \"lots\")"],
    ),
    "max_parallel below 1": (
        DIAMOND.replace("max_parallel: 2", "max_parallel: 0"),
        ["flows.yaml:16: task_types.t.steps[2].max_parallel: must be >= 1 (got 0)"],
    ),
    "unknown sub-flow type": (
        SUB.replace("flow: child", "flow: kid"),
        ["flows.yaml:19: task_types.parent.steps[1].flow: unknown task type \"kid\" (task types: child, parent)"],
    ),
    "a sub-flow including itself directly": (
        SUB.replace("flow: child\n        inputs: {who: name}", "flow: parent"),
        ["flows.yaml:19: task_types.parent.steps[1].flow: a sub-flow includes itself: parent -> parent"],
    ),
    "a sub-flow including itself through another": (
        SUB.replace("      - name: x\n        normal: {module: m, command: c}\n        rollback: {module: m, command: u}",
                    "      - name: x\n        flow: parent"),
        ["flows.yaml:10: task_types.child.steps[0].flow: a sub-flow includes itself: child -> parent -> child"],
    ),
    "inputs naming a parameter the child does not declare": (
        SUB.replace("inputs: {who: name}", "inputs: {who: name, whom: name}"),
        ["flows.yaml:20: task_types.parent.steps[1].inputs.whom: task type \"child\" declares no parameter "
         "\"whom\" (declared: who, level, secret)"],
    ),
    "inputs naming a parameter the parent cannot supply": (
        SUB.replace("inputs: {who: name}", "inputs: {who: nobody}"),
        ["flows.yaml:20: task_types.parent.steps[1].inputs.who: the parent cannot supply \"nobody\": it is "
         "neither a declared parameter nor a step's name"],
    ),
    "a required child parameter left unmapped": (
        SUB.replace("        inputs: {who: name}\n", ""),
        ["flows.yaml:19: task_types.parent.steps[1].flow: task type \"child\" requires parameter \"who\": "
         "map it under inputs"],
    ),
    "a for_each sub-flow over a parameter that is not a list": (
        SUB.replace("        flow: child", "        for_each: name\n        flow: child"),
        ["flows.yaml:19: task_types.parent.steps[1].for_each: parameter \"name\" must be declared type: array "
         "to fan out over it (it is \"string\")"],
    ),
    "inputs naming the item outside a for_each step": (
        SUB.replace("inputs: {who: name}", "inputs: {who: item}"),
        ["flows.yaml:20: task_types.parent.steps[1].inputs.who: the parent cannot supply \"item\": it is "
         "neither a declared parameter nor a step's name"],
    ),
    "a sub-flow step with a command of its own": (
        SUB.replace("        flow: child", "        flow: child\n        normal: {module: m, command: c}"),
        ["flows.yaml:20: task_types.parent.steps[1].normal: a sub-flow step (flow) runs no command of its own: "
         "remove it (the child task's steps do the work and roll it back)"],
    ),
    "inputs without flow": (
        DIAMOND.replace("        max_parallel: 2\n", "        inputs: {a: b}\n"),
        ["flows.yaml:16: task_types.t.steps[2].inputs: inputs are for a sub-flow step: add `flow`"],
    ),
}


@pytest.mark.parametrize("text, expected", REFUSALS.values(), ids=REFUSALS.keys())
def test_each_graph_fault_is_reported_exactly(text: str, expected: list[str]) -> None:
    assert problems(text) == expected
