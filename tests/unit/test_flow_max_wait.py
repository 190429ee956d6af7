"""flows.yaml `max_wait` (docs/design/operations.md, check again later): built into the step, and
every refusal reported as "file:line: path: message"."""

from __future__ import annotations

import pytest

from common.flows import parse_flows
from tests.unit.test_flow_graphs import DIAMOND, SUB
from tests.unit.test_flows import problems

WAITING = DIAMOND.replace("        after: [a]\n        normal", "        after: [a]\n        max_wait: 300\n        normal", 1)


def test_max_wait_is_copied_into_the_step_and_left_out_means_no_bound() -> None:
    steps = parse_flows(WAITING, "flows.yaml").get("t").steps
    assert [s.MaxWait for s in steps] == [None, 300.0, None, None]
    fan_out = WAITING.replace("        max_parallel: 2\n", "        max_parallel: 2\n        max_wait: 1.5\n")
    assert parse_flows(fan_out, "flows.yaml").get("t").steps[2].MaxWait == 1.5


REFUSALS = {
    "zero": (WAITING.replace("max_wait: 300", "max_wait: 0"),
             ["flows.yaml:12: task_types.t.steps[1].max_wait: must be > 0 (got 0)"]),
    "negative": (WAITING.replace("max_wait: 300", "max_wait: -5"),
                 ["flows.yaml:12: task_types.t.steps[1].max_wait: must be > 0 (got -5)"]),
    "text": (WAITING.replace("max_wait: 300", 'max_wait: "300"'),
             ['flows.yaml:12: task_types.t.steps[1].max_wait: must be a number (got "300"; remove the quotes)']),
    "empty": (WAITING.replace("max_wait: 300", "max_wait:"),
              ["flows.yaml:12: task_types.t.steps[1].max_wait: is empty: write a value or remove the key"]),
    "on a sub-flow step": (
        SUB.replace("        flow: child", "        flow: child\n        max_wait: 60"),
        ["flows.yaml:20: task_types.parent.steps[1].max_wait: a sub-flow step (flow) runs no command of its own: "
         "remove it (the child task's steps do the work and roll it back)"],
    ),
}


@pytest.mark.parametrize("text, expected", REFUSALS.values(), ids=REFUSALS.keys())
def test_each_max_wait_fault_is_reported_exactly(text: str, expected: list[str]) -> None:
    assert problems(text) == expected
