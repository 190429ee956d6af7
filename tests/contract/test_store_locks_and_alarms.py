"""The TaskStore contract, continued: the sweeper's lock, alarms and ping, on every store."""

from __future__ import annotations

from typing import Any

from common.engine.document import Alarm
from common.engine.states import Phase
from tests.contract.store_documents import NOW
from tests.contract.store_fixtures import (  # noqa: F401  (fixtures are found by name)
    StoreUnderTest,
    store,
    subject,
)


# --- locks ---------------------------------------------------------------------------------------


def test_lock_is_exclusive_until_it_lapses(store: Any) -> None:
    assert store.try_lock("sweeper", "oss-a", NOW, ttl=10)
    assert not store.try_lock("sweeper", "oss-b", NOW + 5, ttl=10)
    assert store.try_lock("sweeper", "oss-a", NOW + 5, ttl=10)  # renewed: valid to NOW + 15
    assert not store.try_lock("sweeper", "oss-b", NOW + 14, ttl=10)
    assert store.try_lock("sweeper", "oss-b", NOW + 16, ttl=10)  # lapsed: taken over
    assert not store.try_lock("sweeper", "oss-a", NOW + 17, ttl=10)
    assert store.try_lock("relay", "oss-a", NOW + 17, ttl=10)  # locks are independent by name


def test_release_lock_only_by_its_owner(store: Any) -> None:
    assert store.try_lock("sweeper", "oss-a", NOW, ttl=60)
    store.release_lock("sweeper", "oss-b")
    assert not store.try_lock("sweeper", "oss-b", NOW + 1, ttl=60)
    store.release_lock("sweeper", "oss-a")
    assert store.try_lock("sweeper", "oss-b", NOW + 2, ttl=60)
    store.release_lock("never-taken", "oss-a")


# --- alarms --------------------------------------------------------------------------------------


def alarm(alarm_id: str, time: float, message: str = "rollback of step 1 failed") -> Alarm:
    return Alarm(
        AlarmId=alarm_id,
        Kind="rollback_failed",
        Time=time,
        Message=message,
        TaskId="task-1",
        Cursor=1,
        Phase=Phase.ROLLBACK,
        Module="mysql",
        Command="destroy_instance",
    )


def test_add_alarm_is_idempotent(store: Any) -> None:
    first = alarm("a-1", NOW)
    assert store.add_alarm(first) is True
    assert store.add_alarm(alarm("a-1", NOW + 1, "a redelivery")) is False
    assert store.list_alarms() == [first]


def test_list_and_acknowledge_alarms(store: Any) -> None:
    for i in range(3):
        store.add_alarm(alarm(f"a-{i}", NOW + i))
    assert [a.AlarmId for a in store.list_alarms()] == ["a-2", "a-1", "a-0"]
    assert [a.AlarmId for a in store.list_alarms(limit=2)] == ["a-2", "a-1"]

    acked = store.acknowledge_alarm("a-1", by="oncall", now=NOW + 60)
    assert acked == alarm("a-1", NOW + 1).model_copy(
        update={"Acknowledged": True, "AcknowledgedBy": "oncall", "AcknowledgedAt": NOW + 60}
    )
    assert store.list_alarms(acknowledged=True) == [acked]
    assert [a.AlarmId for a in store.list_alarms(acknowledged=False)] == ["a-2", "a-0"]

    again = store.acknowledge_alarm("a-1", by="someone-else", now=NOW + 90)
    assert again == acked  # the first acknowledgement stands
    assert store.acknowledge_alarm("no-such-alarm", by="oncall", now=NOW) is None


def test_ping(store: Any) -> None:
    store.ping()
