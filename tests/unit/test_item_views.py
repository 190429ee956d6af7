"""What a reader is shown of a for_each step's items (common/engine/kinds/for_each/item_views.py) and how
they are masked (common.secrets.task_views.masked_items, and the task view's inline items alike)."""

from __future__ import annotations

import re

import pytest

from common.engine.document import StepItem
from common.engine.kinds.for_each.item_views import (
    STATES_PATTERN,
    ItemQueryError,
    counts_view,
    inline_counts,
    inline_page,
    item_doc,
    paged,
    parse_item_query,
    step_cursor,
)
from common.engine.states import StepState
from common.secrets.task_views import masked_items, masked_task_view
from tests.unit.test_graph_transitions import fan_out, new


def test_a_query_names_the_field_at_fault():
    assert parse_item_query(" failed , waiting", 4, 10).states == [StepState.FAILED, StepState.WAITING]
    assert parse_item_query(None, None, None).limit == 100
    for args, field in (((("bogus"), None, 5), "state"), ((None, -5, 5), "after"), ((None, None, 0), "limit"),
                        ((None, None, 501), "limit")):
        with pytest.raises(ItemQueryError) as raised:
            parse_item_query(*args)
        assert raised.value.field == field
    assert re.fullmatch(STATES_PATTERN, "running, rolled_back") and not re.fullmatch(STATES_PATTERN, "running,,x")


def test_a_step_is_named_by_index_or_name_and_must_fan_out():
    task = new(fan_out(), {"hosts": ["a"]}, task_id="v")
    assert step_cursor(task, "1") == step_cursor(task, "each") == 1
    for name, missing in (("0", False), ("join", False), ("3", True), ("other", True), ("١", True)):
        with pytest.raises(ItemQueryError) as raised:
            step_cursor(task, name)
        assert raised.value.missing is missing


def test_an_inline_page_walks_the_items_in_order_and_says_where_the_next_starts():
    task = new(fan_out(), {"hosts": ["a"]}, task_id="v")
    step = task.Steps[1]
    step.Items = [StepItem(Value=i, State=StepState.FAILED if i % 3 == 0 else StepState.SUCCEEDED) for i in range(10)]
    assert counts_view(inline_counts(step)) == {"failed": 4, "succeeded": 6}
    page, after = paged(inline_page(step, parse_item_query("failed", None, 2)), 2)
    assert [i["Item"] for i in page] == [0, 3] and after == 3
    page, after = paged(inline_page(step, parse_item_query("failed", after, 2)), 2)
    assert [i["Item"] for i in page] == [6, 9] and after is None


def test_items_are_masked_as_the_task_view_masks_its_inline_items():
    task = new(fan_out(), {"hosts": ["db-admin-host", "x"], "password": "hunter2-secret"}, task_id="v")
    task.SecretParameters = ["hosts", "password"]
    step = task.Steps[1]
    step.Items = [StepItem(Value="db-admin-host", Message="login to db-admin-host with hunter2-secret failed",
                           Output={"token": "tok-123456", "note": "issued tok-123456"})]
    shown = masked_items(task, [item_doc(0, step.Items[0])])[0]
    assert shown["Value"] == "***" and shown["Message"] == "login to *** with *** failed"
    assert shown["Output"] == {"token": "***", "note": "issued ***"}
    in_view = masked_task_view(task)["Steps"][1]["Items"][0]
    assert {k: in_view[k] for k in ("Value", "Message", "Output")} == {k: shown[k] for k in ("Value", "Message", "Output")}
