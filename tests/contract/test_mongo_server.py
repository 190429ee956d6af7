"""The Mongo adapters against a real server process (SecantusDB) that crashes and freezes.

What the contract suites cannot show, because their server stays up: an acknowledged write
survives kill -9 of the server, every collection writes with the durable concern, a frozen server
fails a call within the store timeout instead of hanging, and the driver's refusals of the data
itself are not "unavailable".
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from pymongo import monitoring

from common.errors import StoreError, StoreRefused
from common.engine.document import Alarm
from common.store.mongo.events import MongoEventLog
from common.store.side.events import Event
from modules.resource.inventory.mongo import MongoInventory
from modules.resource.inventory.port import Capacity
from common.store.mongo.tasks import MongoStore
from common.store.mongo.client import client_options
from common.store.mongo.schedules import MongoScheduleStore
from tests.contract.test_schedules_contract import schedule
from tests.contract.store_documents import new_task
from tests.support.secantus import SecantusServer, fresh_database_name, secantus_server


@pytest.fixture
def own_server() -> Any:
    """A server of this test's own, to kill or freeze (never the session's)."""
    with secantus_server("baton-crash") as server:
        yield server


# --- durable by default --------------------------------------------------------------------------


def write_then_crash(server: SecantusServer, url: str, count: int) -> tuple[list[str], int]:
    """`count` acknowledged inserts, kill -9 right after the last answer, restart: (ids, found)."""
    store = MongoStore(url, "crash")
    ids = []
    for _ in range(count):
        task = new_task()
        store.insert(task)  # returned: acknowledged
        ids.append(task.TaskId)
    server.kill9()
    store.close()
    server.start()
    after = MongoStore(server.database_url("crash"), "crash")
    try:
        return ids, sum(after.get(task_id) is not None for task_id in ids)
    finally:
        after.close()


def test_acknowledged_writes_survive_kill_9_of_the_server_with_the_default_url(own_server: SecantusServer) -> None:
    ids, found = write_then_crash(own_server, own_server.database_url("crash"), 200)
    assert found == len(ids), f"{len(ids) - found} of {len(ids)} acknowledged tasks lost by kill -9"


class WriteConcerns(monitoring.CommandListener):
    """Records the writeConcern of every write command a client sends."""

    def __init__(self) -> None:
        self.seen: dict[str, list[Any]] = {}
        self._lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name in ("insert", "update", "delete", "findAndModify"):
            collection = event.command[event.command_name]
            with self._lock:
                self.seen.setdefault(collection, []).append(event.command.get("writeConcern"))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def test_every_collection_writes_with_majority_and_journal_by_default(
    secantus: SecantusServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    listener = WriteConcerns()
    from common.store.mongo import client as mongo_client

    real = mongo_client.MongoClient
    monkeypatch.setattr(mongo_client, "MongoClient", lambda *a, **kw: real(*a, event_listeners=[listener], **kw))
    database = fresh_database_name()
    url = secantus.database_url(database)
    store, inventory, events = MongoStore(url, database), MongoInventory(url, database), MongoEventLog(url, database)
    schedules = MongoScheduleStore(url, database)
    try:
        task = new_task()
        store.insert(task)
        assert store.try_lock("sweep", "me", time.time(), 5)
        store.add_alarm(Alarm(AlarmId=uuid.uuid4().hex, Kind="dead_letter", Time=time.time(), Message="m"))
        inventory.add_host("db-1", Capacity(4, 4096, 100), 1000.0)
        inventory.reserve("k1", Capacity(1, 1, 1), task.TaskId, 1000.0, 2000.0)
        inventory.deduct("k1", 1001.0)
        inventory.release(task.TaskId, "release-1", 1002.0)
        events.record(Event(EventId=uuid.uuid4().hex, Time=time.time(), Kind="progress", Message="m"))
        schedules.insert(schedule("nightly"))
    finally:
        store.close(), inventory.close(), events.close(), schedules.close()
    wanted = {"w": "majority", "j": True}
    for collection in ("tasks", "locks", "alarms", "inventory_hosts", "inventory_releases", "events", "schedules"):
        assert listener.seen.get(collection), f"no write to {collection} was seen"
        assert all(concern == wanted for concern in listener.seen[collection]), (collection, listener.seen[collection])


def test_the_url_may_opt_out_of_durability_and_timeouts() -> None:
    retry = {"retryWrites": True, "retryReads": True}
    assert client_options("mongodb://h/db") == {
        "w": "majority", "journal": True, "timeoutMS": 10_000, "serverSelectionTimeoutMS": 10_000,
        "connectTimeoutMS": 10_000, **retry,
    }  # fmt: skip
    assert client_options("mongodb://h/db?w=1&journal=false", 2.5) == {
        "timeoutMS": 2500, "serverSelectionTimeoutMS": 2500, "connectTimeoutMS": 2500, **retry,
    }  # fmt: skip
    assert client_options("mongodb://h/db?W=2")["journal"] is True  # names are case-insensitive
    assert "journal" not in client_options("mongodb://h/db?w=0")  # the driver refuses w=0 + journal
    assert client_options("mongodb://h/db?socketTimeoutMS=500") == {"w": "majority", "journal": True, **retry}
    # retryable writes and reads are on unless the URL names them (its own value then stands)
    assert "retryWrites" not in client_options("mongodb://h/db?retryWrites=false")
    assert client_options("mongodb://h/db?RetryReads=false")["retryWrites"] is True


# --- bounded waits -------------------------------------------------------------------------------


def test_a_frozen_server_fails_a_call_within_the_store_timeout(own_server: SecantusServer) -> None:
    store = MongoStore(own_server.database_url("frozen"), "frozen", timeout_seconds=2)
    task = new_task()
    store.insert(task)
    own_server.freeze()
    try:
        started = time.monotonic()
        with pytest.raises(StoreError):
            store.get(task.TaskId)
        waited = time.monotonic() - started
        with pytest.raises(StoreError):
            store.insert(new_task())
    finally:
        own_server.thaw()
    # Not a speed assertion: without a timeout the call waits for the server as long as it is
    # frozen (indefinitely); 2 s is the bound asked for, the margin is for a busy machine.
    assert waited < 20, waited
    assert store.get(task.TaskId) == task  # and the store works again once the server runs
    store.close()


def test_a_command_that_runs_once_fails_at_first_contact_when_nothing_serves_the_store(
    secantus: SecantusServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from common.store.mongo import first_contact
    from tests.support.ports import free_port

    monkeypatch.setattr(first_contact, "fail_fast", True)  # as a CLI command turns it on
    monkeypatch.setattr(first_contact, "answered", set())
    # Nothing listens there. Opened without indexes, the store would not talk to the server
    # before its first call, which waits out the whole store timeout: the open itself fails.
    with pytest.raises(StoreError):
        MongoStore(f"mongodb://127.0.0.1:{free_port()}/baton", "baton", timeout_seconds=60, indexes="none")
    live = secantus.database_url(fresh_database_name())
    store = MongoStore(live, "baton", indexes="none")
    assert first_contact.answered == {live}  # asked once per URL, not at every client
    store.close()


# --- refusals are not outages --------------------------------------------------------------------


def with_params(parameters: dict[str, Any]) -> Any:
    return new_task().model_copy(update={"Parameters": parameters})


def test_a_document_the_server_cannot_hold_is_refused_not_unavailable(secantus_client: Any) -> None:
    store = MongoStore(secantus_client, fresh_database_name())
    too_large = with_params({"blob": "x" * (17 * 1024 * 1024)})
    with pytest.raises(StoreRefused, match="too large"):
        store.insert(too_large)
    with pytest.raises(StoreRefused):
        store.insert(with_params({"n": 2**64}))
    with pytest.raises(StoreRefused):
        store.insert(with_params({"a\x00b": 1}))
    assert not issubclass(StoreRefused, StoreError)  # callers that retry StoreError never retry it
    assert store.list_tasks() == []
