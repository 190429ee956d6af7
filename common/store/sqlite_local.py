"""SQLite connections for the inventory and event log: one per thread and process, on one file.

They share the task store's file (and its WAL mode) but not its connections, so they keep their
own: a sqlite3 connection must be used by one thread only and never across fork(). A connection
opened by another process id is abandoned (never closed: that would touch locks the parent still
relies on) and a fresh one opened.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from common.errors import StoreError

BUSY_TIMEOUT_MS = 10_000
P = ParamSpec("P")
R = TypeVar("R")


class LocalConnections:
    def __init__(self, path: str, schema: str):
        self.path = path
        self._local = threading.local()
        # (process id, thread, connection): a thread command runs on a thread of its own, so the
        # connections of threads that ended are closed as new ones open, never piled up.
        self._all: list[tuple[int, threading.Thread, sqlite3.Connection]] = []
        self._lock = threading.Lock()
        self._closed = False
        try:
            create_schema(self.get(), schema)
        except sqlite3.Error as e:
            self.close()
            raise StoreError(f"sqlite {path}: cannot create the schema: {e}") from e

    def get(self) -> sqlite3.Connection:
        held = getattr(self._local, "held", None)
        if held is not None and held[0] == os.getpid():
            return held[1]  # type: ignore[no-any-return]
        if self._closed:
            raise StoreError(f"sqlite {self.path}: closed")
        conn = connect(self.path)
        self._local.held = (os.getpid(), conn)
        pid = os.getpid()
        with self._lock:
            ended = [c for p, t, c in self._all if p == pid and not t.is_alive()]
            self._all = [(p, t, c) for p, t, c in self._all if p != pid or t.is_alive()]
            self._all.append((pid, threading.current_thread(), conn))
        for old in ended:  # its thread is gone: nobody uses it any more
            old.close()
        return conn

    def open_count(self) -> int:
        """Connections this process holds open (for tests)."""
        with self._lock:
            return sum(1 for p, _, _ in self._all if p == os.getpid())

    def close(self) -> None:
        self._closed = True
        with self._lock:
            mine = [conn for pid, _, conn in self._all if pid == os.getpid()]
            self._all = []
        for conn in mine:
            conn.close()


def connect(path: str) -> sqlite3.Connection:
    try:
        # Autocommit unless we BEGIN ourselves; check_same_thread=False only so close() can close
        # other threads' connections.
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn
    except sqlite3.Error as e:
        raise StoreError(f"sqlite {path}: cannot open: {e}") from e


def create_schema(conn: sqlite3.Connection, schema: str) -> None:
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise sqlite3.OperationalError(f"journal_mode is {mode}, WAL could not be enabled")
    with immediate(conn):  # processes starting together create it once, each in turn
        for statement in schema.split(";"):
            if statement.strip():
                conn.execute(statement)


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """A transaction holding the write lock from its start: for a read that decides a write."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def translated(method: Callable[P, R]) -> Callable[P, R]:
    """No sqlite3 exception escapes an adapter: callers know StoreError (and the port's errors)."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except sqlite3.Error as e:
            raise StoreError(f"sqlite: {e}") from e

    return wrapper
