"""The ScheduleStore contract, run against every backend (same ids as the inventory's suite)."""

from __future__ import annotations

from typing import Any

import pytest

from common.errors import DuplicateSchedule
from common.scheduling import Schedule
from tests.contract.inventory_fixtures import backend, schedule_store  # noqa: F401

NOW = 1_700_000_000.0


def schedule(name: str, next_at: float = NOW, **extra: Any) -> Schedule:
    return Schedule(ScheduleId=f"id-{name}", Name=name, TaskType="demo", IntervalSeconds=60,
                    Parameters={"nested": {"a": [1, 2]}}, TimeCreate=NOW - 60, NextAt=next_at, **extra)  # fmt: skip


def test_insert_then_get_by_id_and_by_name(schedule_store: Any) -> None:
    first = schedule("nightly", Labels={"team": "db"})
    schedule_store.insert(first)
    assert schedule_store.get("id-nightly") == first
    assert schedule_store.get_by_name("nightly") == first
    assert schedule_store.get("missing") is None and schedule_store.get_by_name("missing") is None


def test_names_and_ids_are_unique(schedule_store: Any) -> None:
    schedule_store.insert(schedule("nightly"))
    with pytest.raises(DuplicateSchedule):
        schedule_store.insert(schedule("nightly").model_copy(update={"ScheduleId": "other"}))
    with pytest.raises(DuplicateSchedule):
        schedule_store.insert(schedule("other").model_copy(update={"ScheduleId": "id-nightly"}))
    assert [s.Name for s in schedule_store.list_schedules()] == ["nightly"]


def test_due_lists_unpaused_schedules_whose_tick_came_earliest_first(schedule_store: Any) -> None:
    schedule_store.insert(schedule("later", NOW + 10))
    schedule_store.insert(schedule("b", NOW - 5))
    schedule_store.insert(schedule("a", NOW))
    schedule_store.insert(schedule("paused", NOW - 100, Paused=True))
    assert [s.Name for s in schedule_store.due(NOW, 10)] == ["b", "a"]
    assert [s.Name for s in schedule_store.due(NOW, 1)] == ["b"]
    assert schedule_store.due(NOW, 0) == []
    assert [s.Name for s in schedule_store.list_schedules()] == ["a", "b", "later", "paused"]
    assert [s.Name for s in schedule_store.list_schedules(limit=2)] == ["a", "b"]


def test_compare_and_set_lets_one_writer_win(schedule_store: Any) -> None:
    original = schedule("nightly")
    schedule_store.insert(original)
    first = original.model_copy(update={"NextAt": NOW + 60, "Fired": 1, "Version": 1})
    second = original.model_copy(update={"Paused": True, "Version": 1})
    assert schedule_store.compare_and_set(first, 0) is True
    assert schedule_store.compare_and_set(second, 0) is False
    assert schedule_store.get("id-nightly") == first
    assert schedule_store.due(NOW + 60, 10) == [first]  # the due index follows the write
    with pytest.raises(ValueError):
        schedule_store.compare_and_set(first, 5)


def test_delete(schedule_store: Any) -> None:
    schedule_store.insert(schedule("nightly"))
    assert schedule_store.delete("id-nightly") is True
    assert schedule_store.delete("id-nightly") is False
    assert schedule_store.get("id-nightly") is None
    assert schedule_store.compare_and_set(schedule("nightly", Version=1), 0) is False
