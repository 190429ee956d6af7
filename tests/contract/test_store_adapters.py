"""The task store adapters one by one: SQLite across processes and reopening, Mongo's errors,
and the factory's URLs. The contract every store shares is in test_store_contract.py."""

from __future__ import annotations

import contextlib
import multiprocessing
import sqlite3
import threading
from typing import Any

import pytest

from common.errors import ConfigError, StoreError
from common.store.factory import database_name, open_store, sqlite_path
from common.store.mongo.tasks import MongoStore
from common.store.sqlite.tasks import SqliteStore
from tests.contract.store_fixtures import count_in_process
from common.engine.document import Task
from tests.contract.store_documents import NOW, claimed, new_task, write
from tests.contract.test_store_locks_and_alarms import alarm
from tests.support.cluster import STATE_DEADLINE


# --- SQLite: processes and durability ------------------------------------------------------------


def test_sqlite_mutations_from_processes_lose_no_update(tmp_path: Any) -> None:
    path = str(tmp_path / "shared.db")
    store = SqliteStore(path)
    task = new_task()
    store.insert(task)
    procs_n, rounds = 4, 200

    context = multiprocessing.get_context("spawn")
    start, tries = context.Barrier(procs_n), context.Value("i", 0)
    procs = [
        context.Process(
            target=count_in_process, args=(path, task.TaskId, f"p{i}", rounds, start, tries, STATE_DEADLINE)
        )
        for i in range(procs_n)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=STATE_DEADLINE)  # 800 contended writes: a state, not a speed
    assert [proc.exitcode for proc in procs] == [0] * procs_n

    final = store.get(task.TaskId)
    assert final.Parameters["count"] == procs_n * rounds
    assert all(final.Parameters[f"p{i}"] == rounds for i in range(procs_n))
    assert final.Version == procs_n * rounds
    lost_races = tries.value - procs_n * rounds
    assert lost_races > 0, "the processes never overlapped: the test proved nothing"
    print(f"{procs_n} processes: {lost_races} lost compare-and-set races, re-read and retried")
    store.close()


def test_sqlite_survives_close_and_reopen(tmp_path: Any) -> None:
    path = str(tmp_path / "durable.db")
    store = SqliteStore(path)
    task = new_task(key="durable")
    store.insert(task)
    progressed = write(store, task, lambda t: claimed(t, NOW + 1))
    store.add_alarm(alarm("a-1", NOW))
    store.close()
    with pytest.raises(StoreError):
        store.get(task.TaskId)

    reopened = SqliteStore(path)
    assert reopened.get(task.TaskId) == progressed
    assert reopened.get_by_idempotency_key("durable") == progressed
    assert [a.AlarmId for a in reopened.list_alarms()] == ["a-1"]
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reopened.close()


def test_sqlite_unopenable_file_is_a_store_error(tmp_path: Any) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(StoreError):
        SqliteStore(str(tmp_path / "a-file" / "tasks.db"))


def test_sqlite_connection_per_thread_after_other_threads_end(tmp_path: Any) -> None:
    store = SqliteStore(str(tmp_path / "threads.db"))
    task = new_task()
    store.insert(task)
    seen: list[Task | None] = []
    for _ in range(3):
        thread = threading.Thread(target=lambda: seen.append(store.get(task.TaskId)))
        thread.start()
        thread.join()
    assert seen == [task] * 3
    store.close()


# --- Mongo: errors stay inside the adapter -------------------------------------------------------


def test_unreachable_mongo_is_a_store_error() -> None:
    with pytest.raises(StoreError):
        MongoStore("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200&connectTimeoutMS=200")


# --- the factory ---------------------------------------------------------------------------------


def test_open_store_sqlite_urls(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    absolute = tmp_path / "abs.db"
    assert sqlite_path(f"sqlite://{absolute}") == str(absolute)  # sqlite:/// + /abs/path
    assert sqlite_path(f"sqlite:///{absolute}") == str(absolute)  # SQLAlchemy's four slashes
    assert sqlite_path(f"sqlite:{absolute}") == str(absolute)
    assert sqlite_path("sqlite:var/baton.db") == "var/baton.db"
    monkeypatch.chdir(tmp_path)
    for url in (f"sqlite://{absolute}", "sqlite:relative.db"):
        store = open_store(url)
        assert isinstance(store, SqliteStore)
        store.ping()
        store.close()
    assert (tmp_path / "relative.db").exists() and absolute.exists()


@pytest.mark.parametrize(
    "url", ["sqlite://host/x.db", "sqlite:", "sqlite::memory:", "sqlite:///x.db?mode=ro"]
)
def test_open_store_rejects_bad_sqlite_urls(url: str) -> None:
    with pytest.raises(ConfigError):
        open_store(url)


def test_open_store_unknown_scheme_names_it() -> None:
    with pytest.raises(ConfigError, match="redis"):
        open_store("redis://localhost/0")
    with pytest.raises(ConfigError):
        open_store("just-a-path.db")


def test_mongo_database_name_comes_from_the_url() -> None:
    assert database_name("mongodb://h1:27017,h2:27017/prod?replicaSet=rs") == "prod"
    assert database_name("mongodb+srv://user:p%40ss@cluster.example.net/ops") == "ops"
    assert database_name("mongodb://localhost:27017") == "baton"
    assert database_name("mongodb://localhost:27017/?w=majority") == "baton"


def test_mongomock_url_is_one_in_memory_server_per_process() -> None:
    name = f"factory_{threading.get_ident()}_{id(object())}"
    first = open_store(f"mongomock:///{name}")
    second = open_store(f"mongomock:///{name}")
    task = new_task()
    first.insert(task)
    assert second.get(task.TaskId) == task
    assert open_store("mongomock://").get(task.TaskId) is None  # database "baton"


def test_sqlite_store_creates_the_folder_of_its_file(tmp_path):
    from common.store.sqlite.tasks import SqliteStore

    store = SqliteStore(tmp_path / "new" / "folder" / "baton.db")
    store.ping()
    store.close()
    assert (tmp_path / "new" / "folder" / "baton.db").exists()
