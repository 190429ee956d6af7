"""`on_failure` in flows.yaml (docs/fan-out.md, "Hold and redrive"): on a for_each step, or on a
task type as the default of its for_each steps; refused where nothing can hold, with the line and
the path."""

from __future__ import annotations

import pytest

from common.errors import FlowError
from common.flows import parse_flows

FLOWS = """
version: 1
task_types:
  patch:
    on_failure: hold
    parameters:
      hosts: {type: array, required: true}
    steps:
      - name: first
        for_each: hosts
        normal: {module: m, command: c}
      - name: second
        for_each: hosts
        on_failure: rollback
        normal: {module: m, command: c}
      - name: after
        normal: {module: m, command: c}
"""


def test_a_task_types_policy_is_its_fan_outs_default_and_a_steps_own_wins():
    steps = parse_flows(FLOWS, "flows.yaml").task_types["patch"].steps
    assert [s.OnFailure for s in steps] == ["hold", None, None]
    assert "OnFailure" not in steps[1].model_dump(mode="json")  # rollback, the default: left out


@pytest.mark.parametrize(("text", "said"), [
    ("""
version: 1
task_types:
  t:
    on_failure: hold
    steps:
      - name: a
        normal: {module: m, command: c}
""", "flows.yaml:5: task_types.t.on_failure: on_failure: hold holds a for_each step"),
    ("""
version: 1
task_types:
  t:
    steps:
      - name: a
        on_failure: hold
        normal: {module: m, command: c}
""", "task_types.t.steps[0].on_failure: only a for_each step takes it: add for_each, or remove it"),
    ("""
version: 1
task_types:
  t:
    parameters:
      hosts: {type: array}
    steps:
      - name: a
        for_each: hosts
        on_failure: stop
        normal: {module: m, command: c}
""", "task_types.t.steps[0].on_failure"),
])
def test_on_failure_where_nothing_can_hold_is_refused_naming_the_place(text, said):
    with pytest.raises(FlowError) as refused:
        parse_flows(text, "flows.yaml")
    assert said in str(refused.value)
