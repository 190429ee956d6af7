"""The ItemStore contract (common/store/items/port.py), run against every backend: SQLite,
mongomock and SecantusDB, a real wire-protocol server (same ids as the inventory's suite).

Records of one step are found by index, one compare-and-set wins per version, a repeated insert
changes nothing, and steps, generations and tasks never see each other's records."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from common.engine.document import HistoryEvent, OutboxEntry
from common.engine.document import Run as UnitRun
from common.engine.kinds.for_each.item_record import OWES_SETTLED, OWES_SUCCESSOR, ItemRecord
from common.engine.states import Phase, StepState
from common.errors import StoreRefused
from common.store.mongo.items import MongoItemStore
from common.store.items.paging import CHAIN_POINTS
from tests.contract.inventory_fixtures import Backend, backend, item_store  # noqa: F401
from tests.contract.store_fixtures import real_mongo_client, real_mongo_url  # noqa: F401

NOW = 1_700_000_000.0
W, R, S, F = StepState.WAITING, StepState.RUNNING, StepState.SUCCEEDED, StepState.FAILED


def record(item: int, task: str = "t1", *, generation: int = 0, cursor: int = 2, **fields: Any) -> ItemRecord:
    fields.setdefault("Value", {"host": f"h{item}"})
    return ItemRecord(TaskId=task, Generation=generation, Cursor=cursor, Item=item, **fields)


def step(n: int, task: str = "t1", **fields: Any) -> list[ItemRecord]:
    return [record(i, task, **fields) for i in range(n)]


def running(item: int, deadline: float, **fields: Any) -> ItemRecord:
    run = UnitRun(Cursor=2, Item=item, Phase=Phase.NORMAL, Attempt=1, DispatchId=f"d{item}", Deadline=deadline)
    return record(item, State=R, Run=run, **fields)


def changed(stored: ItemRecord, **fields: Any) -> ItemRecord:
    """The next version of a stored record."""
    return stored.model_copy(update={**fields, "Version": stored.Version + 1})


def items(records: list[ItemRecord]) -> list[int]:
    return [r.Item for r in records]


def settle(store: Any, item: int, state: StepState = S, **fields: Any) -> ItemRecord:
    current = store.get_item("t1", 0, 2, item)
    new = changed(current, State=state, Open=False, **fields)
    assert store.compare_and_set_item(new, current.Version) is True
    return new


def test_insert_is_idempotent_and_leaves_a_changed_record_alone(item_store: Any) -> None:
    batch = step(3)
    assert item_store.insert_items(batch) == 3
    moved = settle(item_store, 1, Output={"id": 7})
    assert item_store.insert_items(step(3)) == 0  # a repeated batch: nothing new, nothing reset
    assert item_store.get_item("t1", 0, 2, 1) == moved
    assert item_store.insert_items(step(5)) == 2  # a batch half written before: the rest goes in
    assert item_store.get_item("t1", 0, 2, 1) == moved
    assert items(item_store.page_items("t1", 0, 2)) == [0, 1, 2, 3, 4]
    assert item_store.insert_items([]) == 0


def test_get_returns_the_record_as_written_with_its_sweeper_fields(item_store: Any) -> None:
    outbox = [OutboxEntry(DispatchId="d4", Queue="q", Body={"a": [1, {"b": None}]}, DueAt=NOW + 5)]
    history = [HistoryEvent(Time=NOW, Event="claimed", Cursor=2, Item=4, Actor="w1")]
    original = running(4, NOW + 30, Owes=[OWES_SUCCESSOR], Outbox=outbox, History=history, ChildTaskId="c",
                       Attempts=2, Message="ünïcode ✓")
    item_store.insert_items([original])
    got = item_store.get_item("t1", 0, 2, 4)
    assert got == original
    assert (got.SweepAt, got.OutboxDue) == (NOW + 30, NOW + 5)  # derived on writing
    assert item_store.get_item("t1", 0, 2, 5) is None
    assert item_store.get_item("t1", 1, 2, 4) is None and item_store.get_item("t1", 0, 3, 4) is None
    assert item_store.get_item("t2", 0, 2, 4) is None


def test_compare_and_set_wins_once_per_version(item_store: Any) -> None:
    item_store.insert_items(step(2))
    stored = item_store.get_item("t1", 0, 2, 0)
    first, second = changed(stored, State=R), changed(stored, State=F)
    assert item_store.compare_and_set_item(first, 0) is True
    assert item_store.compare_and_set_item(second, 0) is False  # a stale writer loses
    assert item_store.get_item("t1", 0, 2, 0) == first
    assert item_store.compare_and_set_item(changed(first, State=S), 1) is True
    assert item_store.get_item("t1", 0, 2, 0).Version == 2
    assert item_store.get_item("t1", 0, 2, 1).Version == 0  # its neighbour untouched


def test_compare_and_set_refuses_a_wrong_next_version_and_a_missing_record(item_store: Any) -> None:
    item_store.insert_items(step(1))
    stored = item_store.get_item("t1", 0, 2, 0)
    for wrong in (0, 2, 5):
        with pytest.raises(ValueError):
            item_store.compare_and_set_item(stored.model_copy(update={"Version": wrong}), 0)
    assert item_store.get_item("t1", 0, 2, 0) == stored
    assert item_store.compare_and_set_item(changed(record(9)), 0) is False  # never inserted by a set
    assert item_store.get_item("t1", 0, 2, 9) is None


def test_two_writers_racing_on_one_version_have_exactly_one_winner(backend: Backend) -> None:
    stores = [backend.open_item_store() for _ in range(2)]  # each thread its own handle
    try:
        stores[0].insert_items(step(1))
        for attempt in range(20):
            stored = stores[0].get_item("t1", 0, 2, 0)
            start, results = threading.Barrier(2), [None, None]

            def write(n: int) -> None:
                start.wait(timeout=30)
                new = changed(stored, Message=f"writer {n}", Progress=str(attempt))
                results[n] = stores[n].compare_and_set_item(new, stored.Version)

            threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
            assert sorted(results) == [False, True], results  # type: ignore[type-var]
            winner = results.index(True)  # type: ignore[arg-type]
            assert stores[1].get_item("t1", 0, 2, 0).Message == f"writer {winner}"
        assert stores[0].get_item("t1", 0, 2, 0).Version == 20
    finally:
        for store in stores:
            store.close()


def test_exists_in_states_answers_for_the_step_and_the_states_asked(item_store: Any) -> None:
    assert item_store.exists_in_states("t1", 0, 2, [StepState.WAITING]) is False  # no records at all
    item_store.insert_items(step(3))
    item_store.insert_items([record(0, cursor=3, State=StepState.FAILED)])
    assert item_store.exists_in_states("t1", 0, 2, [StepState.WAITING]) is True
    assert item_store.exists_in_states("t1", 0, 2, [StepState.FAILED]) is False  # the other step's
    assert item_store.exists_in_states("t1", 0, 3, [StepState.SUCCEEDED, StepState.FAILED]) is True
    assert item_store.exists_in_states("t1", 1, 3, [StepState.FAILED]) is False  # another generation
    for item in range(3):
        settle(item_store, item)
    assert item_store.exists_in_states("t1", 0, 2, [StepState.WAITING, StepState.RUNNING]) is False
    assert item_store.exists_in_states("t1", 0, 2, [StepState.SUCCEEDED]) is True


def test_any_open_follows_the_records_as_they_close(item_store: Any) -> None:
    assert item_store.any_open("t1", 0, 2) is False  # no records at all
    item_store.insert_items(step(3))
    item_store.insert_items([record(0, cursor=3, Open=False)])
    for item in (2, 0):
        settle(item_store, item)
        assert item_store.any_open("t1", 0, 2) is True
    settle(item_store, 1, F)
    assert item_store.any_open("t1", 0, 2) is False
    assert item_store.any_open("t1", 0, 3) is False
    reopened = changed(item_store.get_item("t1", 0, 2, 1), State=StepState.ROLLING_BACK, Open=True)
    assert item_store.compare_and_set_item(reopened, 1) is True  # backward: open again
    assert item_store.any_open("t1", 0, 2) is True


def test_count_by_state_leaves_out_states_with_none(item_store: Any) -> None:
    assert item_store.count_by_state("t1", 0, 2) == {}
    item_store.insert_items(step(6))
    settle(item_store, 0)
    settle(item_store, 3)
    settle(item_store, 4, F)
    counts = item_store.count_by_state("t1", 0, 2)
    assert counts == {W: 3, S: 2, F: 1} and all(isinstance(k, StepState) for k in counts)


def test_attempt_sums_add_up_the_steps_records_only(item_store: Any) -> None:
    assert item_store.attempt_sums("t1", 0, 2) == (0, 0)
    item_store.insert_items(step(5))  # never started: no attempt (a default left out of the record)
    item_store.insert_items([record(0, cursor=3, Attempts=9), record(0, generation=1, Attempts=9)])
    settle(item_store, 0, Attempts=1)
    settle(item_store, 2, F, Attempts=3, RollbackAttempts=2)
    settle(item_store, 4, StepState.ROLLED_BACK, Attempts=1, RollbackAttempts=1)
    assert item_store.attempt_sums("t1", 0, 2) == (5, 3)


def test_page_failed_finds_the_items_whose_normal_phase_failed_in_any_state(item_store: Any) -> None:
    from common.engine.states import ResultCode

    item_store.insert_items(step(8))
    item_store.insert_items([record(0, cursor=3, Code=ResultCode.FAILED)])  # another step's
    settle(item_store, 1, Code=ResultCode.OK)
    settle(item_store, 2, StepState.ROLLED_BACK, Code=ResultCode.FAILED)  # failed, then undone
    settle(item_store, 5, F, Code=ResultCode.TIMED_OUT)
    settle(item_store, 6, StepState.CANCELLED)
    assert items(item_store.page_failed("t1", 0, 2)) == [2, 5]
    assert items(item_store.page_failed("t1", 0, 2, limit=1)) == [2]
    assert items(item_store.page_failed("t1", 0, 2, after=2)) == [5]
    assert item_store.page_failed("t1", 0, 2, limit=0) == []


def test_page_items_by_index_with_after_limit_and_states(item_store: Any) -> None:
    item_store.insert_items(list(reversed(step(10))))
    for item in (1, 4, 5, 8):
        settle(item_store, item)
    settle(item_store, 6, F)
    assert items(item_store.page_items("t1", 0, 2)) == list(range(10))
    assert items(item_store.page_items("t1", 0, 2, limit=3)) == [0, 1, 2]
    assert items(item_store.page_items("t1", 0, 2, after=2, limit=3)) == [3, 4, 5]
    assert items(item_store.page_items("t1", 0, 2, after=8)) == [9]
    assert items(item_store.page_items("t1", 0, 2, after=9)) == []
    assert items(item_store.page_items("t1", 0, 2, states=[S])) == [1, 4, 5, 8]
    assert items(item_store.page_items("t1", 0, 2, states={S, F}, after=1, limit=3)) == [4, 5, 6]
    assert items(item_store.page_items("t1", 0, 2, states=[F, S, S], after=5)) == [6, 8]
    assert items(item_store.page_items("t1", 0, 2, states=[R])) == []
    assert item_store.page_items("t1", 0, 2, states=[]) == []
    assert item_store.page_items("t1", 0, 2, limit=0) == [] and item_store.page_items("t1", 0, 2, limit=-1) == []
    assert item_store.page_items("t1", 0, 2, limit=2)[1] == item_store.get_item("t1", 0, 2, 1)


def test_page_items_of_one_chain(item_store: Any) -> None:
    # MaxParallel 3: chain 1 is items 1, 4, 7, 10, ...
    item_store.insert_items(step(20))
    for item in (4, 10, 11, 13):
        settle(item_store, item)
    assert items(item_store.page_items("t1", 0, 2, modulus=3, residue=1)) == [1, 4, 7, 10, 13, 16, 19]
    assert items(item_store.page_items("t1", 0, 2, modulus=3, residue=1, after=4, limit=1)) == [7]
    assert items(item_store.page_items("t1", 0, 2, modulus=3, residue=1, after=5, limit=2)) == [7, 10]
    assert items(item_store.page_items("t1", 0, 2, modulus=3, residue=0, after=17)) == [18]
    assert items(item_store.page_items("t1", 0, 2, modulus=3, residue=2, after=19)) == []
    # The next applied item of the chain, as a rollback asks for it.
    assert items(item_store.page_items("t1", 0, 2, states=[S], modulus=3, residue=1, after=4, limit=1)) == [10]
    assert items(item_store.page_items("t1", 0, 2, states=[S, W], modulus=3, residue=1, after=4)) == [7, 10, 13, 16, 19]
    assert items(item_store.page_items("t1", 0, 2, modulus=1, residue=0, after=17)) == [18, 19]
    # A page longer than a query's point look-ups walks the index instead: the same answer.
    long_page = item_store.page_items("t1", 0, 2, modulus=3, residue=1, limit=CHAIN_POINTS + 1)
    assert items(long_page) == [1, 4, 7, 10, 13, 16, 19]
    for modulus, residue in ((3, None), (None, 1), (0, 0), (3, 3), (3, -1)):
        with pytest.raises(ValueError):
            item_store.page_items("t1", 0, 2, modulus=modulus, residue=residue)


def test_outputs_in_item_order_whatever_the_order_of_writing(item_store: Any) -> None:
    assert item_store.outputs("t1", 0, 2) == []
    order = [3, 0, 4, 1, 2]
    assert item_store.insert_items([record(i) for i in order]) == 5
    for i in reversed(order):
        settle(item_store, i, Output={"id": i, "nested": {"list": [i, None, "x"]}})
    assert item_store.outputs("t1", 0, 2) == [{"id": i, "nested": {"list": [i, None, "x"]}} for i in range(5)]
    item_store.insert_items([record(0, cursor=5)])
    assert item_store.outputs("t1", 0, 5) == [{}]  # an item without output yet


def test_due_for_sweep_earliest_first_and_limited(item_store: Any) -> None:
    item_store.insert_items([running(0, NOW + 3), running(1, NOW - 1), running(2, NOW + 100), record(3),
                             running(4, NOW)])
    assert items(item_store.due_for_sweep(NOW + 5, 10)) == [1, 4, 0]
    assert items(item_store.due_for_sweep(NOW + 5, 2)) == [1, 4]
    assert items(item_store.due_for_sweep(NOW, 10)) == [1, 4]
    assert item_store.due_for_sweep(NOW + 500, 0) == [] and item_store.due_for_sweep(NOW + 500, -3) == []
    settle(item_store, 1, Run=None)  # concluded: no run, out of the sweeper's sight
    assert items(item_store.due_for_sweep(NOW + 500, 10)) == [4, 0, 2]


def test_unsent_outbox_oldest_first_and_limited(item_store: Any) -> None:
    def entry(due: float) -> OutboxEntry:
        return OutboxEntry(DispatchId=f"d{due}", Queue="q", Body={}, DueAt=due)

    item_store.insert_items([record(0, Outbox=[entry(NOW + 4), entry(NOW - 2)]), record(1),
                             record(2, Outbox=[entry(NOW)]), record(3, Outbox=[entry(NOW + 50)])])
    assert items(item_store.unsent_outbox(NOW + 5, 10)) == [0, 2]  # item 0's oldest entry counts
    assert items(item_store.unsent_outbox(NOW + 5, 1)) == [0]
    assert item_store.unsent_outbox(NOW + 5, 0) == []
    settle(item_store, 0, Outbox=[])
    assert items(item_store.unsent_outbox(NOW + 100, 10)) == [2, 3]


def test_owing_lists_records_holding_a_notice_and_forgets_them_once_cleared(item_store: Any) -> None:
    item_store.insert_items([record(5, "t2", Owes=[OWES_SETTLED]), record(3, Owes=[OWES_SUCCESSOR, OWES_SETTLED]),
                             record(1), record(0, Owes=[]), record(2, Owes=[OWES_SETTLED])])
    assert [(r.TaskId, r.Item) for r in item_store.owing(10)] == [("t1", 2), ("t1", 3), ("t2", 5)]
    assert [(r.TaskId, r.Item) for r in item_store.owing(2)] == [("t1", 2), ("t1", 3)]
    assert item_store.owing(0) == []
    current = item_store.get_item("t1", 0, 2, 3)
    assert item_store.compare_and_set_item(changed(current, Owes=[]), current.Version) is True
    assert [(r.TaskId, r.Item) for r in item_store.owing(10)] == [("t1", 2), ("t2", 5)]


def test_delete_task_items_removes_every_generation_of_that_task_only(item_store: Any) -> None:
    item_store.insert_items([*step(3), *step(2, generation=1), record(0, cursor=7), *step(2, "t10")])
    assert item_store.delete_task_items("t1") == 6
    assert item_store.delete_task_items("t1") == 0
    for generation, cursor in ((0, 2), (1, 2), (0, 7)):
        assert item_store.page_items("t1", generation, cursor) == []
    assert items(item_store.page_items("t10", 0, 2)) == [0, 1]  # a prefix of its id is another task


def test_generations_are_separate_records(item_store: Any) -> None:
    assert item_store.insert_items([*step(3), *step(2, generation=1)]) == 5
    settle(item_store, 0)
    settle(item_store, 1)
    settle(item_store, 2)
    assert item_store.any_open("t1", 0, 2) is False and item_store.any_open("t1", 1, 2) is True
    assert item_store.count_by_state("t1", 1, 2) == {W: 2}
    assert items(item_store.page_items("t1", 1, 2)) == [0, 1]
    assert item_store.get_item("t1", 1, 2, 0).State is W
    assert len(item_store.outputs("t1", 1, 2)) == 2


def test_records_of_two_tasks_never_mix(item_store: Any) -> None:
    item_store.insert_items([*step(4, "a"), *step(2, "b")])
    a0 = item_store.get_item("a", 0, 2, 0)
    assert item_store.compare_and_set_item(changed(a0, State=S, Open=False, Output={"task": "a"}), 0) is True
    assert item_store.get_item("b", 0, 2, 0).State is W
    assert item_store.count_by_state("a", 0, 2) == {W: 3, S: 1}
    assert item_store.count_by_state("b", 0, 2) == {W: 2}
    assert items(item_store.page_items("b", 0, 2)) == [0, 1] and {r.TaskId for r in item_store.page_items("b", 0, 2)} == {"b"}
    assert item_store.outputs("b", 0, 2) == [{}, {}]


def test_a_record_no_store_can_hold_is_refused_for_good(backend: Backend, item_store: Any) -> None:
    bad = record(0, Value="\ud800")  # a lone surrogate: no valid encoding exists
    with pytest.raises(StoreRefused):
        item_store.insert_items([bad])
    assert item_store.get_item("t1", 0, 2, 0) is None
    item_store.insert_items([record(0)])
    with pytest.raises(StoreRefused):
        item_store.compare_and_set_item(changed(record(0), Output={"x": "\udfff"}), 0)
    if backend.kind != "mongo-mongomock":  # mongomock empties the document before it fails to encode
        assert item_store.get_item("t1", 0, 2, 0) == record(0)


def test_a_step_of_ten_thousand_records(backend: Backend) -> None:
    if backend.kind == "mongo-mongomock":
        pytest.skip("mongomock checks a unique index by scanning the collection: 10,000 inserts take "
                    "minutes; SQLite and the wire-protocol servers run it")
    if backend.mongo_url is None:
        item_store = backend.open_item_store()
    else:  # the test server reads every record a range matches: generous waits on a loaded machine
        item_store = MongoItemStore(backend.mongo_url, backend.database or "", timeout_seconds=600)
    try:
        _a_step_of_ten_thousand_records(item_store)
    finally:
        item_store.close()


def _a_step_of_ten_thousand_records(item_store: Any) -> None:
    total, batch = 10_000, 500
    for start in range(0, total, batch):
        assert item_store.insert_items([record(i, Value=i) for i in range(start, start + batch)]) == batch
    assert item_store.insert_items([record(i) for i in range(total - batch, total)]) == 0
    assert item_store.count_by_state("t1", 0, 2) == {W: total}
    assert item_store.any_open("t1", 0, 2) is True
    for item in (0, 4_999, 9_998):
        settle(item_store, item)
    assert item_store.count_by_state("t1", 0, 2) == {W: total - 3, S: 3}
    assert items(item_store.page_items("t1", 0, 2, after=4_990, limit=5)) == [4_991, 4_992, 4_993, 4_994, 4_995]
    assert items(item_store.page_items("t1", 0, 2, states=[S])) == [0, 4_999, 9_998]
    assert items(item_store.page_items("t1", 0, 2, modulus=1000, residue=998)) == [998 + 1000 * k for k in range(10)]
    assert item_store.get_item("t1", 0, 2, 9_999).Value == 9_999
    seen, after = 0, None
    while page := item_store.page_items("t1", 0, 2, after=after, limit=1_000):
        assert items(page) == list(range(seen, seen + len(page)))
        seen, after = seen + len(page), page[-1].Item
    assert seen == total
    assert len(item_store.outputs("t1", 0, 2)) == total
    assert item_store.any_open("t1", 1, 2) is False and item_store.count_by_state("t1", 0, 3) == {}
