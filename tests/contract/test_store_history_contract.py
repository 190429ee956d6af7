"""The task store's archived history (common.engine.core.history: events moved out of a task's document),
on every store of the contract suite."""

from __future__ import annotations

from typing import Any

from common.engine.document import HistoryEvent
from tests.contract.store_fixtures import store, subject  # noqa: F401


def events(*names: str) -> list[HistoryEvent]:
    return [HistoryEvent(Time=float(n), Event=name, Cursor=n, Message=f"m{n}") for n, name in enumerate(names)]


def test_archived_events_come_back_in_order_by_number_range(store: Any) -> None:
    store.archive_history("t1", 0, events("a", "b", "c"))
    store.archive_history("t1", 3, events("d", "e"))
    store.archive_history("t2", 0, events("other"))
    assert [e.Event for e in store.archived_history("t1", 0, 5)] == ["a", "b", "c", "d", "e"]
    assert [e.Event for e in store.archived_history("t1", 1, 4)] == ["b", "c", "d"]
    assert store.archived_history("t1", 5, 10) == [] and store.archived_history("none", 0, 9) == []
    assert store.archived_history("t1", 0, 1)[0] == events("a")[0]  # every field kept


def test_archiving_the_same_events_again_changes_nothing(store: Any) -> None:
    store.archive_history("t1", 0, events("a", "b"))
    store.archive_history("t1", 0, events("a", "b"))  # a retried write after a lost race
    store.archive_history("t1", 1, [])
    assert [e.Event for e in store.archived_history("t1", 0, 10)] == ["a", "b"]


def test_pruning_deletes_only_archived_events_older_than_the_cutoff(store: Any) -> None:
    store.archive_history("t1", 0, events("a", "b", "c", "d"))  # Time 0, 1, 2, 3
    store.archive_history("t2", 0, events("x", "y"))
    assert store.prune_history(2.0) == 4  # a, b of t1 and x, y of t2
    assert [e.Event for e in store.archived_history("t1", 0, 9)] == ["c", "d"]
    assert store.archived_history("t2", 0, 9) == [] and store.prune_history(2.0) == 0
