"""What the API, the CLI and the console show of a step over records (oss/services/item_views.py), on every
item store backend: SQLite, mongomock and SecantusDB (a real MongoDB wire-protocol server). The
counts by state are the records' own; a page filtered by states walks them in item order, a next
page starts past the last one shown, and another step's or generation's records never show."""

from __future__ import annotations

from typing import Any

from common.engine.kinds.for_each.item_record import ItemRecord
from common.engine.kinds.for_each.item_views import parse_item_query
from common.engine.states import StepState
from oss.services.item_views import item_counts, item_page
from tests.contract.inventory_fixtures import Backend, backend, item_store  # noqa: F401
from tests.contract.store_fixtures import real_mongo_client, real_mongo_url  # noqa: F401
from tests.unit.test_graph_transitions import fan_out, new

STATES = [StepState.SUCCEEDED, StepState.RUNNING, StepState.FAILED, StepState.WAITING, StepState.ROLLED_BACK]
SIZE = 230


def task_over_records():
    task = new(fan_out(max_parallel=5), {"hosts": [f"h{i}" for i in range(SIZE)]}, task_id="v1")
    step = task.Steps[1]
    step.ItemStore, step.ItemCount, step.ItemsOpen, step.Items = "records", SIZE, True, None
    return task


def state_of(item: int) -> StepState:
    return STATES[(item * 7) % len(STATES)]


def test_counts_and_pages_of_a_step_over_records(item_store: Any) -> None:
    task = task_over_records()
    item_store.insert_items([ItemRecord(TaskId="v1", Cursor=1, Item=i, Value=f"h{i}", State=state_of(i))
                             for i in range(SIZE)])
    item_store.insert_items([ItemRecord(TaskId="v1", Cursor=2, Item=i, State=StepState.FAILED) for i in range(9)])
    item_store.insert_items([ItemRecord(TaskId="v1", Generation=1, Cursor=1, Item=i) for i in range(9)])
    expected = {}
    for i in range(SIZE):
        expected[state_of(i).value] = expected.get(state_of(i).value, 0) + 1
    assert item_counts(task, item_store) == {1: dict(sorted(expected.items()))}
    for states in (None, "failed", "running,waiting", "rolled_back, succeeded, failed"):
        wanted = None if states is None else {s.strip() for s in states.split(",")}
        seen, after = [], None
        while True:
            page = item_page(task, 1, parse_item_query(states, after, 40), item_store)
            assert len(page["Items"]) <= 40 and page["ItemCount"] == SIZE
            seen += page["Items"]
            if page["NextAfter"] is None:
                break
            after = page["NextAfter"]
        assert [i["Item"] for i in seen] == [i for i in range(SIZE) if wanted is None or state_of(i).value in wanted]
        assert all(i["Value"] == f"h{i['Item']}" and i["State"] == state_of(i["Item"]).value for i in seen)


def test_a_step_whose_records_are_not_inserted_yet_counts_them_waiting(item_store: Any) -> None:
    """Right after the step opens, its records are still owed (the entry that inserts them): the
    counts add up to ItemCount all the same, never `{}` beside ItemCount N."""
    task = task_over_records()
    assert item_counts(task, item_store) == {1: {"waiting": SIZE}}
    item_store.insert_items([ItemRecord(TaskId="v1", Cursor=1, Item=i, State=StepState.RUNNING) for i in range(5)])
    assert item_counts(task, item_store) == {1: {"running": 5, "waiting": SIZE - 5}}


def test_a_step_whose_records_are_owed_pages_its_items_waiting_from_the_entry(item_store: Any) -> None:
    from common.engine.document import OutboxEntry

    task = task_over_records()
    body = {"Cursor": 1, "Generation": 0, "Values": [f"h{i}" for i in range(SIZE)]}
    task.Outbox.append(OutboxEntry(DispatchId="v1:g0:1:open_items", Kind="open_items", Body=body, DueAt=0.0))
    first = item_page(task, 1, parse_item_query(None, None, 40), item_store)
    assert [(i["Item"], i["State"], i["Value"]) for i in first["Items"]] == [(i, "waiting", f"h{i}") for i in range(40)]
    assert first["NextAfter"] == 39
    last = item_page(task, 1, parse_item_query("waiting", SIZE - 3, 40), item_store)
    assert [i["Item"] for i in last["Items"]] == [SIZE - 2, SIZE - 1] and last["NextAfter"] is None
    assert item_page(task, 1, parse_item_query("running", None, 40), item_store)["Items"] == []
    item_store.insert_items([ItemRecord(TaskId="v1", Cursor=1, Item=i, Value=f"h{i}") for i in range(3)])
    assert [i["Item"] for i in item_page(task, 1, parse_item_query(None, None, 40), item_store)["Items"]] == [0, 1, 2]


def test_a_step_passed_over_backward_shows_its_items_skipped(item_store: Any) -> None:
    task = task_over_records()
    task.Steps[1].State, task.Steps[1].ItemsOpen = StepState.SKIPPED, False
    item_store.insert_items([ItemRecord(TaskId="v1", Cursor=1, Item=i, State=state_of(i)) for i in range(SIZE)])
    ran = sum(state_of(i) in (StepState.SUCCEEDED, StepState.FAILED) for i in range(SIZE))
    counts = item_counts(task, item_store)[1]
    assert counts["skipped"] == ran and "succeeded" not in counts and "failed" not in counts
    skipped = item_page(task, 1, parse_item_query("skipped", None, 500), item_store)["Items"]
    assert len(skipped) == ran and {i["State"] for i in skipped} == {"skipped"}
    assert item_page(task, 1, parse_item_query("succeeded,failed", None, 500), item_store)["Items"] == []
    waiting = item_page(task, 1, parse_item_query("waiting, skipped", None, 500), item_store)["Items"]
    assert {i["State"] for i in waiting} == {"skipped", "waiting"}
