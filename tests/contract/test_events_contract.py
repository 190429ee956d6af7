"""The EventLog contract, run against every backend (same ids as the inventory's suite)."""

from __future__ import annotations

from typing import Any

from common.store.side.events import Event
from tests.contract.inventory_fixtures import backend, event_log  # noqa: F401

NOW = 1_700_000_000.0


def event(event_id: str, time: float = NOW, task_id: str | None = "t1", **extra: Any) -> Event:
    return Event(EventId=event_id, Time=time, Kind="progress", Message=f"event {event_id}", TaskId=task_id, **extra)


def test_record_is_idempotent_on_the_event_id(event_log: Any) -> None:
    first = event("e1", Subject="app_1", TaskType="create_mysql_instance", Data={"step": 0, "nested": {"a": [1]}})
    assert event_log.record(first) is True
    assert event_log.record(event("e1", time=NOW + 5)) is False
    assert event_log.list_events() == [first]


def test_list_events_newest_first_by_task_and_limited(event_log: Any) -> None:
    for i, task in enumerate(["t1", "t2", "t1", None]):
        event_log.record(event(f"e{i}", NOW + i, task))
    assert [e.EventId for e in event_log.list_events()] == ["e3", "e2", "e1", "e0"]
    assert [e.EventId for e in event_log.list_events(task_id="t1")] == ["e2", "e0"]
    assert [e.EventId for e in event_log.list_events(limit=2)] == ["e3", "e2"]
    assert event_log.list_events(limit=0) == []
