"""A new task's steps come from FlowDefinition.new_steps: equal to the task type's templates, and
the task's own (a change to one reaches neither the template nor another task)."""

from __future__ import annotations

import time

from common.engine.changes import Timing, create_task
from common.flows import parse_flows

FLOWS = """
version: 1
task_types:
  two:
    steps:
      - name: a
        normal:   {module: resource, command: noop, timeout: 30, retry: 0}
        rollback: {module: resource, command: noop_rollback, timeout: 30, retry: 0}
      - name: b
        normal:   {module: mysql, command: noop, timeout: 30, retry: 0}
"""


def test_new_steps_equal_the_templates_and_share_nothing_with_them() -> None:
    flow = parse_flows(FLOWS, "flows.yaml").get("two")
    first, second = flow.new_steps(), flow.new_steps()
    assert first == flow.steps == second
    first[0].NormalBackoff.Initial = 99.0
    first[1].FlowInputs["x"] = "y"
    assert flow.steps[0].NormalBackoff.Initial != 99.0 and second[0].NormalBackoff.Initial != 99.0
    assert "x" not in flow.steps[1].FlowInputs and "x" not in second[1].FlowInputs


def test_a_task_made_from_new_steps_is_the_task_made_from_the_templates() -> None:
    flow = parse_flows(FLOWS, "flows.yaml").get("two")
    timing = Timing(time.time())
    ids = iter(f"id-{n}" for n in range(100))
    again = iter(f"id-{n}" for n in range(100))
    copied = create_task(task_type="two", steps=flow.steps, parameters={}, timing=timing, ids=lambda: next(ids))
    owned = create_task(task_type="two", steps=flow.new_steps(), own_steps=True, parameters={}, timing=timing,
                        ids=lambda: next(again))  # fmt: skip
    assert owned == copied
