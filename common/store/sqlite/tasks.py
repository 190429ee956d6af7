"""The embedded task store: one SQLite file shared by every baton process on a machine.

OSS, the module processes and the sweeper all open the same file, so everything here must hold
across processes as well as threads:

- WAL mode: readers never block the writer and the writer never blocks readers.
- `busy_timeout`: a writer that finds the write lock taken waits for it instead of failing.
- `synchronous=NORMAL`: a commit survives a crash of any process; only a power loss may drop the
  last few commits (WAL's documented trade-off, and the one the design accepts for speed).
- One connection per thread (a sqlite3 connection must not be used by two threads at once), opened
  on first use and reused: opening a connection costs far more than a whole read-modify-write.

The whole document is stored as compact JSON; the fields that queries filter or sort on are copied
into columns by the same statement that writes the document, so they cannot drift apart.
"""

from __future__ import annotations

import functools
import itertools
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import pydantic_core

from common.errors import DuplicateTask, StoreError, StoreRefused, UnreadableTask
from common.engine.document import Task
from common.engine.states import TaskStatus
from common.store.sqlite.connections import BUSY_TIMEOUT_MS, LocalConnections, create_schema
from common.store.sqlite import (
    alarms as sqlite_alarms, history as sqlite_history, outbox as sqlite_outbox,
    waiting as sqlite_waiting,
)
from common.store.tasks import unreadable
from common.store.tasks.filters import ALL_TASKS, TaskFilter, sql_where

PING_TIMEOUT_MS = 2_000
_PING = """
INSERT INTO locks (name, owner, expires) VALUES ('baton-ping', 'ping', ?)
ON CONFLICT (name) DO UPDATE SET expires = excluded.expires
"""
_ROW = "task_id, task_type, time_create, status, doc"  # what every task read selects
_COLUMNS = "status, deadline, outbox_due"  # the _INDEXED columns, as a read by id notes them

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    task_id         TEXT PRIMARY KEY,
    version         INTEGER NOT NULL,
    status          INTEGER NOT NULL,
    task_type       TEXT NOT NULL,
    time_create     REAL NOT NULL,
    idempotency_key TEXT UNIQUE,
    user_id         TEXT,
    deadline        REAL,
    outbox_due      REAL,
    doc             TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_deadline ON tasks (deadline) WHERE deadline IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_outbox_due ON tasks (outbox_due) WHERE outbox_due IS NOT NULL;
-- Listings sort by (time_create, task_id) descending: each filtered listing's index ends in that
-- pair, so SQLite walks it in order instead of sorting (no "TEMP B-TREE FOR ORDER BY").
CREATE INDEX IF NOT EXISTS tasks_status_time_id ON tasks (status, time_create, task_id);
CREATE INDEX IF NOT EXISTS tasks_type_time_id ON tasks (task_type, time_create, task_id);
CREATE INDEX IF NOT EXISTS tasks_time_id ON tasks (time_create, task_id);
-- Replaced by the ones above (tasks_time was the head of tasks_time_id).
DROP INDEX IF EXISTS tasks_status_time;
DROP INDEX IF EXISTS tasks_type_time;
DROP INDEX IF EXISTS tasks_time;
DROP INDEX IF EXISTS tasks_user_time;

CREATE TABLE IF NOT EXISTS locks (
    name    TEXT PRIMARY KEY,
    owner   TEXT NOT NULL,
    expires REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS alarms (
    alarm_id     TEXT PRIMARY KEY,
    time         REAL NOT NULL,
    acknowledged INTEGER NOT NULL,
    doc          TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS alarms_time ON alarms (time);
CREATE INDEX IF NOT EXISTS alarms_ack_time ON alarms (acknowledged, time);
"""

_INSERT_TASK = """
INSERT INTO tasks (task_id, version, status, task_type, time_create, idempotency_key,
                   user_id, deadline, outbox_due, doc)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
# Files created before a column existed get it here, filled from the documents, before the
# indexes that use it are created. (column, its definition, how to fill it, its index)
_ADDED_COLUMNS = (
    (
        "user_id",
        "TEXT",
        "json_extract(doc, '$.UserId')",
        "CREATE INDEX IF NOT EXISTS tasks_user_time_id ON tasks (user_id, time_create, task_id)",
    ),
)
# SQLite rewrites an index whenever its column is in SET, even to the same value (a page more for
# the WAL, ~5 us each). So the columns a task never changes (task_type, time_create,
# idempotency_key, user_id) are never set, and of the indexed columns a transition may change only those
# that did change are (see SqliteStore._changed_since_read).
_INDEXED = ("status", "deadline", "outbox_due")


def _replace_statement(changed: tuple[bool, ...]) -> str:
    columns = [f"{name} = ?" for name, flag in zip(_INDEXED, changed) if flag]
    assignments = ", ".join(["version = ?", *columns, "doc = ?"])
    return f"UPDATE tasks SET {assignments} WHERE task_id = ? AND version = ?"


_REPLACE_TASK = {
    changed: _replace_statement(changed)
    for changed in itertools.product((False, True), repeat=len(_INDEXED))
}
_ALL_CHANGED = (True,) * len(_INDEXED)
_COLUMNS_NOTED = 4096  # tasks whose indexed columns a store remembers (a few hundred bytes each)
# One statement, so atomic without an explicit transaction: insert the lock, or take it over only
# when it is ours already or has lapsed. `changes()` is 0 exactly when someone else holds it.
_TAKE_LOCK = """
INSERT INTO locks (name, owner, expires) VALUES (?, ?, ?)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
WHERE locks.owner = excluded.owner OR locks.expires < ?
"""


P = ParamSpec("P")
R = TypeVar("R")


def _translated(method: Callable[P, R]) -> Callable[P, R]:
    """Let no sqlite3 exception escape: callers know StoreError and DuplicateTask only."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except sqlite3.IntegrityError as e:
            # The only constraints are the unique TaskId and IdempotencyKey.
            raise DuplicateTask(str(e)) from e
        except sqlite3.Error as e:
            raise StoreError(f"sqlite: {e}") from e
        except pydantic_core.PydanticSerializationError as e:
            # Text that is not valid Unicode: the edge's input limits keep it out; should some
            # get here, it is refused for good (as the Mongo store does), never a 500.
            raise StoreRefused("sqlite refuses the write: the document cannot be encoded "
                               "(text that is not valid Unicode)") from e

    return wrapper


def _indexed_values(task: Task) -> tuple[Any, ...]:
    """The values of the _INDEXED columns for this document."""
    # `deadline` holds SweepAt: the earliest deadline of any run, or of the task itself (the
    # column kept its format-1 name so existing files need no migration). Derived by the model.
    task._refresh_derived()  # noqa: SLF001
    return int(task.TaskStatus), task.SweepAt, task.OutboxDue


def _encoded(task: Task) -> str:
    """The document as stored, once _indexed_values has derived its sweeper fields: Task.to_json
    would derive them a second time."""
    return task.model_dump_json()


class SqliteStore(sqlite_waiting.WaitingQuery, sqlite_outbox.OutboxQuery, sqlite_alarms.AlarmsQuery, sqlite_history.HistoryQuery):
    """TaskStore on a SQLite file; safe for many threads and many processes sharing the file."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        # The default store (sqlite:var/baton.db) must work in a fresh checkout: make its folder.
        try:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        except OSError as e:
            raise StoreError(f"sqlite {self.path}: cannot create its folder: {e}") from e
        # The indexed columns of each task as last read or written here, by version (_changed_since_read).
        self._columns: dict[str, tuple[int, tuple[Any, ...]]] = {}
        self._conns = LocalConnections(self.path, _create_schema)
        # One writer at a time among this process's threads. SQLite has one write lock per file;
        # a connection that finds it taken sleeps in its busy handler (1, 2, 5, 10... ms) although
        # the write it waits for takes a fraction of a millisecond. A module with hundreds of
        # async commands in flight commits from all its store threads at once: here they queue
        # and hand over at once instead. Other processes still meet the busy handler.
        self._write_lock = threading.Lock()

    # --- tasks ---------------------------------------------------------------------------------

    @_translated
    def insert(self, task: Task) -> None:
        status, deadline, outbox_due = _indexed_values(task)
        values = (task.TaskId, task.Version, status, task.TaskType, task.TimeCreate,
                  task.IdempotencyKey, task.UserId, deadline, outbox_due, _encoded(task))  # fmt: skip
        conn = self._conn()
        with self._write_lock:
            conn.execute(_INSERT_TASK, values)

    @_translated
    def get(self, task_id: str) -> Task | None:
        # The row's own columns are noted, as they are: what the next compare-and-set's UPDATE
        # matches (a document's derived fields are not worked out again for it).
        row = self._conn().execute(f"SELECT {_ROW}, {_COLUMNS} FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        if row is None:
            return None
        task = self._parsed(row)
        self._note_columns(task.TaskId, task.Version, row[5:])
        return task

    @_translated
    def version_of(self, task_id: str) -> int | None:
        row = self._conn().execute("SELECT version FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        return None if row is None else int(row[0])

    @_translated
    def get_by_idempotency_key(self, key: str) -> Task | None:
        return self._one(f"SELECT {_ROW} FROM tasks WHERE idempotency_key = ?", (key,))

    @_translated
    def compare_and_set(self, task: Task, expected_version: int) -> bool:
        """TaskId, TaskType, TimeCreate, IdempotencyKey and UserId are fixed at insert (no
        transition changes them); their columns are not rewritten."""
        if task.Version != expected_version + 1:
            raise ValueError(f"task.Version must be {expected_version + 1}, not {task.Version}")
        values = _indexed_values(task)
        changed = self._changed_since_read(task.TaskId, expected_version, values)
        row = (task.Version, *(value for value, flag in zip(values, changed) if flag), _encoded(task),
               task.TaskId, expected_version)  # fmt: skip
        conn = self._conn()
        with self._write_lock:  # the document is encoded before: only the statement waits
            cursor = conn.execute(_REPLACE_TASK[changed], row)
        if cursor.rowcount != 1:
            return False
        self._note_columns(task.TaskId, task.Version, values)
        return True

    @_translated
    def due_for_sweep(self, now: float, limit: int) -> list[Task]:
        sql = f"SELECT {_ROW} FROM tasks WHERE deadline <= ? ORDER BY deadline LIMIT ?"
        return self._tasks(sql, (now,), limit)

    @_translated
    def unsent_outbox(self, due_before: float, limit: int) -> list[Task]:
        sql = f"SELECT {_ROW} FROM tasks WHERE outbox_due <= ? ORDER BY outbox_due LIMIT ?"
        return self._tasks(sql, (due_before,), limit)

    @_translated
    def list_tasks(self, task_filter: TaskFilter = ALL_TASKS, *, limit: int = 100) -> list[Task]:
        where, params = sql_where(task_filter)
        sql = f"SELECT {_ROW} FROM tasks {where} ORDER BY time_create DESC, task_id DESC LIMIT ?"
        return self._tasks(sql, tuple(params), limit, placeholders=True)

    @_translated
    def count_tasks(self, task_filter: TaskFilter) -> dict[TaskStatus, int]:
        where, params = sql_where(task_filter)
        rows = self._conn().execute(f"SELECT status, count(*) FROM tasks {where} GROUP BY status", params)
        return {TaskStatus(status): count for status, count in rows}

    # --- locks ---------------------------------------------------------------------------------

    @_translated
    def try_lock(self, name: str, owner: str, now: float, ttl: float) -> bool:
        cursor = self._conn().execute(_TAKE_LOCK, (name, owner, now + ttl, now))
        return cursor.rowcount == 1

    @_translated
    def release_lock(self, name: str, owner: str) -> None:
        self._conn().execute("DELETE FROM locks WHERE name = ? AND owner = ?", (name, owner))

    # --- lifecycle -----------------------------------------------------------------------------

    @_translated
    def ping(self) -> None:
        """Can this store serve: read AND write? (Reads keep working while every write fails,
        e.g. another process holding the write lock.) One small upsert of a row of its own in
        the locks table, waiting at most PING_TIMEOUT_MS for the lock instead of the usual 10 s."""
        conn = self._conn()
        conn.execute("SELECT 1 FROM tasks LIMIT 1").fetchall()
        conn.execute(f"PRAGMA busy_timeout = {PING_TIMEOUT_MS}")
        try:
            conn.execute(_PING, (time.time(),))
        finally:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def close(self) -> None:
        """Close every thread's connection. Later calls raise StoreError."""
        self._conns.close()

    # --- the parts -----------------------------------------------------------------------------

    def _tasks(self, sql: str, params: tuple[Any, ...], limit: int, placeholders: bool = False) -> list[Task]:
        """Run a query ending in LIMIT ?; a limit below 1 means none (SQLite: -1 = unlimited).

        Every row is fetched BEFORE any is parsed. A statement still stepping holds its
        connection's read snapshot open; when parsing raised half-way, the cursor lived on in the
        traceback, and that connection's next write failed with "database is locked" (it cannot
        write from a stale snapshot, and waiting does not help): after a dozen failed list calls,
        every thread of the API's pool had such a connection and every POST answered 503.
        A row that does not parse is skipped (or, for a listing, shown as a placeholder) and
        reported, never raised (common.store.tasks.unreadable).
        """
        if limit <= 0:
            return []
        rows = self._conn().execute(sql, (*params, limit)).fetchall()
        tasks = []
        for row in rows:
            task = self._parse(row)
            if isinstance(task, Task):
                tasks.append(task)
            elif placeholders:
                tasks.append(unreadable.placeholder(*row[:4], why=task))
        return tasks

    def _one(self, sql: str, params: tuple[Any, ...]) -> Task | None:
        row = self._conn().execute(sql, params).fetchone()
        return None if row is None else self._parsed(row)

    def _parsed(self, row: tuple[Any, ...]) -> Task:
        task = self._parse(row)
        if isinstance(task, Task):
            return task
        raise UnreadableTask(row[0], task)

    def _parse(self, row: tuple[Any, ...]) -> Task | str:
        """The row's task, or why it cannot be read (after marking and alarming it)."""
        try:
            return Task.from_json(row[4])
        except Exception as exc:  # RecursionError, ValueError, ValidationError: all the same here
            why, mark = unreadable.reason(exc), unreadable.should_mark(exc)
        if mark:  # out of the sweeper's sight until the document is written again (recomputed then)
            self._conn().execute("UPDATE tasks SET deadline = NULL, outbox_due = NULL WHERE task_id = ?", (row[0],))
        unreadable.report(self.add_alarm, row[0], why, time.time())
        return why

    def _changed_since_read(
        self, task_id: str, version: int, values: tuple[Any, ...]
    ) -> tuple[bool, ...]:
        """Which indexed columns differ from the row the UPDATE will match, when known.

        A task's document at a given Version is unique (only one compare-and-set can create it),
        so the columns this process last read or wrote for (task_id, version), on any thread, are
        exactly those of the row `WHERE task_id = ? AND version = ?` matches; if that was of
        another version, assume everything changed. (A module commits on the task its claim
        wrote, and claims on the task its commit wrote, without reading: common.store.tasks.mutate.)
        """
        last = self._columns.get(task_id)
        if last is None or last[0] != version:
            return _ALL_CHANGED
        return tuple(old != new for old, new in zip(last[1], values))

    def _note_columns(self, task_id: str, version: int, values: tuple[Any, ...]) -> None:
        columns = self._columns
        columns.pop(task_id, None)  # to the end: the oldest noted goes first
        columns[task_id] = (version, values)
        if len(columns) > _COLUMNS_NOTED:
            try:
                del columns[next(iter(columns))]
            except (KeyError, RuntimeError, StopIteration):  # another thread's note or drop meanwhile
                pass

    def _conn(self) -> sqlite3.Connection:
        return self._conns.get()


def _create_schema(conn: sqlite3.Connection) -> None:
    create_schema(conn, f"{_SCHEMA};{sqlite_history.SCHEMA}", _add_columns)


def _add_columns(conn: sqlite3.Connection) -> None:
    """The indexed columns added since the first files were written."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(tasks)")}
    for column, definition, fill, index in _ADDED_COLUMNS:
        if column not in have:
            conn.execute(f"ALTER TABLE tasks ADD COLUMN {column} {definition}")
            conn.execute(f"UPDATE tasks SET {column} = {fill}")
        conn.execute(index)
