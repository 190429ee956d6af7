"""The event log's and inventory's SQLite connections, one per thread
(common/store/sqlite/connections.py): a thread command runs on a thread of its own, so the connections of ended threads must be closed
as new ones open, not piled up (one file descriptor and page cache each)."""

from __future__ import annotations

import threading

from common.store.sqlite.connections import LocalConnections

SCHEMA = "CREATE TABLE IF NOT EXISTS t (x INTEGER)"


def use_on_a_thread(conns: LocalConnections) -> None:
    thread = threading.Thread(target=lambda: conns.get().execute("INSERT INTO t VALUES (1)"))
    thread.start()
    thread.join()


def test_the_connections_of_ended_threads_are_closed_as_new_ones_open(tmp_path):
    conns = LocalConnections(str(tmp_path / "events.db"), SCHEMA)
    try:
        for _ in range(50):
            use_on_a_thread(conns)
        assert conns.open_count() <= 2  # this thread's and the last thread's, at most
        assert conns.get().execute("SELECT count(*) FROM t").fetchone()[0] == 50  # every write kept
    finally:
        conns.close()


def test_a_live_threads_connection_is_kept(tmp_path):
    conns = LocalConnections(str(tmp_path / "events.db"), SCHEMA)
    release, opened = threading.Event(), threading.Event()

    def hold() -> None:
        conns.get().execute("INSERT INTO t VALUES (1)")
        opened.set()
        release.wait(30)
        conns.get().execute("INSERT INTO t VALUES (2)")  # the same connection, still open

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        opened.wait(30)
        for _ in range(5):
            use_on_a_thread(conns)
        release.set()
        holder.join(30)
        assert conns.get().execute("SELECT count(*) FROM t").fetchone()[0] == 7
    finally:
        release.set()
        conns.close()
