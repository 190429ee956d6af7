"""The one SQLite connection manager: one connection per thread and process, on one file.

Every SQLite adapter (tasks, items, locks, schedules, modules, events, the inventory) holds one
of these. A sqlite3 connection must be used by one thread at a time and never across fork(): a
thread opens its own on first use and reuses it (opening costs far more than a whole
read-modify-write); it is closed when its thread ends. After fork() the child abandons the
parent's connections (never closes them: that would touch locks the parent still relies on) and
opens fresh ones lazily.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from common.errors import StoreClosed, StoreError

BUSY_TIMEOUT_MS = 10_000
P = ParamSpec("P")
R = TypeVar("R")


class LocalConnections:
    def __init__(self, path: str, schema: str | Callable[[sqlite3.Connection], None]):
        """`schema`: the statements that create the tables, or a function that does."""
        self.path = path
        self._local = threading.local()
        self._open: weakref.WeakSet[_Handle] = weakref.WeakSet()
        self._closed = False
        # Guards _open and _closed: a thread's first use may open its connection while another
        # thread closes the store, and neither may miss the other (see _adopt).
        self._lock = threading.Lock()
        conn = connect(path)
        try:
            schema(conn) if callable(schema) else create_schema(conn, schema)
        except sqlite3.Error as e:
            conn.close()
            raise StoreError(f"sqlite {path}: cannot create the schema: {e}") from e
        self._adopt(conn)
        _MANAGERS.add(self)

    def get(self) -> sqlite3.Connection:
        try:
            return self._local.handle.conn  # type: ignore[no-any-return]
        except AttributeError:
            if self._closed:
                raise StoreClosed(f"sqlite {self.path}: store is closed") from None
            return self._adopt(connect(self.path))

    def open_count(self) -> int:
        """Connections open now: one per live thread that used the store (for tests)."""
        return len(self._open)

    def close(self) -> None:
        """Close every thread's connection. Later calls raise StoreError."""
        with self._lock:
            self._closed = True
            handles, self._open = list(self._open), weakref.WeakSet()
        for handle in handles:
            handle.conn.close()

    def _adopt(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        # The handle lives as long as this thread's locals: when the thread ends, the connection
        # is closed with it, and the weak set stops seeing it. Added under the lock, after a
        # last look at _closed: a connection opened while the store closed would otherwise stay
        # open and in use, missed by close() (or break its walk over the set).
        handle = _Handle(conn)
        with self._lock:
            if self._closed:
                conn.close()
                raise StoreClosed(f"sqlite {self.path}: store is closed")
            self._open.add(handle)
        self._local.handle = handle
        return conn

    def _forget_after_fork(self) -> None:
        _ABANDONED.extend(handle.conn for handle in self._open)
        self._local = threading.local()
        self._open = weakref.WeakSet()
        self._lock = threading.Lock()  # the parent's may have been held by a thread the child lacks


class _Handle:
    """A weak-referenceable holder: sqlite3.Connection itself cannot be weakly referenced."""

    __slots__ = ("conn", "__weakref__")

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn


_MANAGERS: weakref.WeakSet[LocalConnections] = weakref.WeakSet()
_ABANDONED: list[sqlite3.Connection] = []


def _after_fork_in_child() -> None:
    for manager in list(_MANAGERS):
        manager._forget_after_fork()  # noqa: SLF001


os.register_at_fork(after_in_child=_after_fork_in_child)


def connect(path: str) -> sqlite3.Connection:
    try:
        # isolation_level=None: every statement commits on its own unless we BEGIN ourselves, so
        # a compare-and-set is one autocommitted UPDATE. check_same_thread=False only so close()
        # may close other threads' connections; each is still used by one thread.
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn
    except sqlite3.Error as e:
        raise StoreError(f"sqlite {path}: cannot open: {e}") from e


def create_schema(conn: sqlite3.Connection, schema: str,
                  migrate: Callable[[sqlite3.Connection], None] | None = None) -> None:
    """WAL mode, the tables, and `migrate` (columns added since) in the same transaction."""
    # WAL is a property of the file: set once, every later connection (any process) gets it.
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise sqlite3.OperationalError(f"journal_mode is {mode}, WAL could not be enabled")
    # executescript would COMMIT first; each statement runs inside one IMMEDIATE transaction so
    # processes starting together create the schema once, each waiting its turn.
    with immediate(conn):
        for statement in schema.split(";"):
            if statement.strip():
                conn.execute(statement)
        if migrate is not None:
            migrate(conn)


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """A transaction holding the write lock from its start: for a read that decides a write."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:  # some errors (a full disk, say) have rolled it back already
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
