"""The rate store contract (common/store/gates/rate/{sqlite,mongo}.py through its table.py),
run against every backend: SQLite, mongomock and SecantusDB (docs/design/rates.md).

A slot is taken by one compare-and-set; taking again gives a member its own slot back; and a race
for the last slots of a window, between threads or between processes each with its own handle,
has exactly as many winners as there were slots."""

from __future__ import annotations

from typing import Any

import pytest

from common.engine.document import KeyRate, RateStart
from common.engine.gates.rate.window import Full, Taken
from common.store.gates.rate.table import RateTable
from tests.contract.inventory_fixtures import Backend, backend, rate_store  # noqa: F401
from tests.support.key_store_contract import check_compare_and_set
from tests.support.races import handles, open_where, race_processes, race_threads, won

NOW = 1_700_000_000.0


def test_compare_and_set_inserts_once_and_lets_one_writer_win(rate_store: Any) -> None:
    first = KeyRate(Key="k", Limit=2, Per=60.0, Version=1)
    rewrites = tuple(first.model_copy(update={"Starts": [RateStart(Member=m, At=NOW)], "Version": 2}) for m in "ab")
    check_compare_and_set(rate_store, first, KeyRate(Key="k", Version=1), rewrites)


def test_take_up_to_the_limit_then_full_until_the_oldest_leaves(rate_store: Any) -> None:
    table = RateTable(rate_store)
    assert table.take("k", "a", limit=2, per=60.0, now=NOW) == Taken(NOW)
    assert table.take("k", "a", limit=2, per=60.0, now=NOW + 5) == Taken(NOW)  # its own slot again
    assert table.take("k", "b", limit=2, per=60.0, now=NOW + 10) == Taken(NOW + 10)
    assert table.take("k", "c", limit=2, per=60.0, now=NOW + 20) == Full(NOW + 60)
    assert table.take("k", "c", limit=2, per=60.0, now=NOW + 60) == Taken(NOW + 60)
    stored = table.get("k")
    assert [(s.Member, s.At) for s in stored.Starts] == [("b", NOW + 10), ("c", NOW + 60)] and stored.Version == 3
    for key in ("z", "y"):
        table.take(key, "a", limit=1, per=1.0, now=NOW)
    assert [rate.Key for rate in table.list_rates()] == ["k", "y", "z"]
    assert [rate.Key for rate in table.list_rates(limit=2)] == ["k", "y"] and table.list_rates(limit=0) == []


def test_threads_racing_for_the_last_slots_take_exactly_those(backend: Backend) -> None:
    with handles(lambda: RateTable(backend.open_rate_store()), 8) as tables:
        tables[0].take("k", "first", limit=3, per=60.0, now=NOW)
        taken = race_threads(8, lambda i: tables[i].take("k", f"t{i}", limit=3, per=60.0, now=NOW + 1))
        won = [f"t{i}" for i, answer in enumerate(taken) if isinstance(answer, Taken)]
        stored = tables[0].get("k")
        assert len(won) == 2 and sorted(s.Member for s in stored.Starts) == sorted(["first", *won])


def _take_in_process(where: tuple, worker: int, start: Any, wins: Any) -> None:
    """Entry point of a spawned process: take slots with its own handle, on its own clock."""
    from common.store.gates.rate.mongo import MongoRateStore
    from common.store.gates.rate.sqlite import SqliteRateStore

    table = RateTable(open_where(where, SqliteRateStore, MongoRateStore))
    try:
        start.wait()  # bounded by the barrier's own timeout (tests.support.races)
        for n in range(5):
            if isinstance(table.take("k", f"p{worker}.{n}", limit=4, per=3600.0), Taken):
                won(wins)
    finally:
        table.close()


def test_processes_racing_take_no_more_than_the_limit(backend: Backend) -> None:
    if not backend.shared_by_processes:
        pytest.skip("mongomock lives inside one process: the thread race covers it")
    wins = race_processes(backend, _take_in_process, 4)
    setup = RateTable(backend.open_rate_store())
    assert wins == 4 and len(setup.get("k").Starts) == 4
    setup.close()
