"""A value that was secret stays secret in a sub-flow's child: the loader refuses mapping a
parent's secret to a parameter the child declares plain, and a child type that declares no
parameters takes the secrecy along (its views, events and webhooks mask the value)."""

from __future__ import annotations

import pytest

from common.engine.kinds.sub_flow.changes import start_child
from common.errors import FlowError
from common.flows.loader import parse_flows
from common.secrets.task_views import masked_task_view
from common.engine.kinds.sub_flow.entries import START_CHILD
from common.engine.core.entries import Timing, create_task
from tests.support.builders import counter_ids

CANARY = "pw-canary-in-child-7"
FLOWS = """version: 1
task_types:
  child:
    parameters:
      note: {type: string}
    steps:
      - {name: x, normal: {module: m, command: c}}
  free_child:
    steps:
      - {name: x, normal: {module: m, command: c}}
  parent:
    parameters:
      password: {type: string, secret: true}
      keys: {type: array, secret: true}
    steps:
      - name: sub
        flow: child
        inputs: {note: password}
"""


def test_a_parent_secret_mapped_to_a_plain_child_parameter_is_refused() -> None:
    with pytest.raises(FlowError) as error:
        parse_flows(FLOWS)
    assert ('flows.yaml:18: task_types.parent.steps[0].inputs.note: maps secret "password" to "note", '
            'which task type "child" does not declare secret: add `secret: true` there') in str(error.value)
    each = FLOWS.replace("      - name: sub\n", "      - name: sub\n        for_each: keys\n").replace(
        "{note: password}", "{note: item}")
    with pytest.raises(FlowError, match='maps secret "item" to "note"'):
        parse_flows(each)
    parse_flows(FLOWS.replace("note: {type: string}", "note: {type: string, secret: true}"))
    parse_flows(each.replace("{note: item}", "{note: item_index}"))  # a position is no secret


def _child(flows: str, parameters: dict) -> tuple:
    parent = create_task(task_type="parent", steps=parse_flows(flows).get("parent").steps, parameters=parameters,
                         secret_parameters=["password", "keys"], timing=Timing(1.0), ids=counter_ids(), task_id="P")
    (entry,) = [e for e in parent.Outbox if e.Kind == START_CHILD]
    return parent, start_child(entry.Body, Timing(2.0), counter_ids())


def test_a_child_type_without_parameters_keeps_a_parent_secret_secret() -> None:
    parent, child = _child(FLOWS.replace("flow: child", "flow: free_child"), {"password": CANARY})
    assert child.Parameters["note"] == CANARY  # the command needs it
    assert child.SecretParameters == ["note"]
    view = masked_task_view(child)
    assert view["Parameters"]["note"] == "***" and CANARY not in str(view)
    assert CANARY not in str(masked_task_view(parent))  # the start entry's copy, too


def test_the_items_of_a_secret_list_stay_secret_in_their_children() -> None:
    flows = FLOWS.replace("flow: child", "flow: free_child").replace(
        "      - name: sub\n", "      - name: sub\n        for_each: keys\n").replace("{note: password}", "{note: item}")
    parent, child = _child(flows, {"keys": [CANARY]})
    assert child.SecretParameters == ["note"] and CANARY not in str(masked_task_view(child))
