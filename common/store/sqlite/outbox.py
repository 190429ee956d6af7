"""The SQLite task store's outbox queries (see common.store.tasks.port), beside it to keep that
file within its size: which of some outbox entries are still unsent, read from the JSON without
parsing the documents (a publisher checks a batch of deferred mark-sents for the price of one light
query instead of one full read each); and the mark-sent of one entry as one statement on the stored
document (docs/design/stores.md, "Writes")."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from common.store.sqlite.connections import immediate, translated

# SQLite's default limit of bound parameters is 999 on old builds: stay well below it.
_CHUNK = 400
# Mark-sents written in one transaction: in a transaction of its own, each cost about twice the
# CPU (its commit's WAL writes, mostly system time). Bounded: a batch holds the write lock, and
# the submissions' inserts wait for it (a few milliseconds at most).
_DROPS_PER_TRANSACTION = 32


# `->` and `->>` (SQLite 3.38): `->` gives an entry's DueAt as the JSON text it was written as.
# From a double, SQLite would print the number again with 15 digits, where the encoder wrote as
# many as it takes to read the same float back.
DROPS_IN_PLACE = sqlite3.sqlite_version_info >= (3, 38)

# The document as mark_sent through mutate would write it: the entry removed, Version bumped,
# OutboxDue the earliest DueAt left (null when none). The outbox is read in one pass (each pass
# parses the document again), which also gathers the entries kept: one json_set writes them with
# the rest, where a json_remove would write the document once more and json_set parse it again.
# An aggregate takes its rows in no promised order, and an ORDER BY inside json_group_array needs
# SQLite 3.44: so the entries come from a subquery ordered by their index in the array (json_each's
# key), an order SQLite keeps for an aggregate that depends on it (any but count, min and max).
# A test compares the text with the encoder's, byte for byte, on an outbox of many entries.
# Only on a document it can edit exactly:
# - one entry with that DispatchId (the change removes every one);
# - `outbox_due` set: a document this version marked unreadable has it cleared (and stays
#   for the read-change-write way, which reports it);
# - strict JSON: a float written as `Infinity` or `NaN` fails `json_valid`, where SQLite's JSON
#   functions would write it back otherwise;
# - the current format (a format 1 document, with `Active`, is upgraded by a Python write);
# - Version in the document and in its column agree.
_DROP_SENT = """
UPDATE tasks SET
    version = tasks.version + 1,
    outbox_due = m.due,
    doc = json_set(
        tasks.doc,
        '$.Outbox', json(m.kept),
        '$.Version', tasks.version + 1,
        '$.OutboxDue', CASE WHEN m.due IS NULL THEN json('null')  -- no entry left (a new task's): no second pass
                            ELSE json(coalesce((SELECT o.value -> '$.DueAt' FROM json_each(tasks.doc, '$.Outbox') AS o
                                                WHERE o.value ->> '$.DueAt' = m.due LIMIT 1), 'null')) END)
FROM (
    SELECT count(*) FILTER (WHERE o.value ->> '$.DispatchId' = :dispatch) AS hits,
           min(o.value ->> '$.DueAt') FILTER (WHERE o.value ->> '$.DispatchId' IS NOT :dispatch) AS due,
           json_group_array(json(o.value)) FILTER (WHERE o.value ->> '$.DispatchId' IS NOT :dispatch) AS kept
    FROM (SELECT e.key, e.value
          FROM tasks AS t, json_each(t.doc, '$.Outbox') AS e
          WHERE t.task_id = :task AND t.outbox_due IS NOT NULL AND json_valid(t.doc)  -- before the outbox is read
          ORDER BY e.key) AS o
) AS m
WHERE tasks.task_id = :task
    AND m.hits = 1
    AND json_type(tasks.doc, '$.Active') IS NULL
    AND json_extract(tasks.doc, '$.Version') = tasks.version
"""

# The same for an outbox of that one entry alone (a new task's, most often), without reading the
# entries one by one: a third less work than the general statement. CASE: nothing reads the
# outbox of a document that is not strict JSON (its functions would fail on it).
_DROP_ONLY_ENTRY = """
UPDATE tasks SET
    version = version + 1,
    outbox_due = NULL,
    doc = json_set(doc, '$.Outbox', json('[]'), '$.Version', version + 1,
                   '$.OutboxDue', json('null'))
WHERE task_id = :task
    AND outbox_due IS NOT NULL
    AND CASE WHEN json_valid(doc) THEN json_array_length(doc, '$.Outbox') = 1
                                       AND doc ->> '$.Outbox[0].DispatchId' = :dispatch
                                       AND json_type(doc, '$.Active') IS NULL
                                       AND json_extract(doc, '$.Version') = version
             ELSE 0 END
"""


def _dropped(conn: sqlite3.Connection, task_id: str, dispatch_id: str) -> bool:
    keys = {"task": task_id, "dispatch": dispatch_id}
    if conn.execute(_DROP_ONLY_ENTRY, keys).rowcount == 1:
        return True
    return conn.execute(_DROP_SENT, keys).rowcount == 1


class OutboxQuery:
    _conn: Any  # SqliteStore's: this thread's connection
    _write_lock: Any  # SqliteStore's: one writer at a time among the process's threads

    @translated
    def drop_sent(self, task_id: str, dispatch_id: str) -> bool:
        if not DROPS_IN_PLACE:
            return False
        conn = self._conn()
        with self._write_lock:
            return _dropped(conn, task_id, dispatch_id)

    @translated
    def drop_sent_many(self, entries: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        if not DROPS_IN_PLACE:
            return set()
        conn = self._conn()
        dropped: set[tuple[str, str]] = set()
        for start in range(0, len(entries), _DROPS_PER_TRANSACTION):
            with self._write_lock, immediate(conn):
                for task_id, dispatch_id in entries[start:start + _DROPS_PER_TRANSACTION]:
                    if _dropped(conn, task_id, dispatch_id):
                        dropped.add((task_id, dispatch_id))
        return dropped

    @translated
    def in_outbox(self, entries: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        wanted = set(entries)
        task_ids = sorted({task_id for task_id, _ in wanted})
        found: set[tuple[str, str]] = set()
        for start in range(0, len(task_ids), _CHUNK):
            chunk = task_ids[start:start + _CHUNK]
            sql = (
                "SELECT tasks.task_id, json_extract(o.value, '$.DispatchId')"
                " FROM tasks, json_each(tasks.doc, '$.Outbox') AS o"
                f" WHERE tasks.task_id IN ({', '.join('?' * len(chunk))})"
            )
            rows = self._conn().execute(sql, chunk).fetchall()  # never leave a read open
            found.update(pair for pair in rows if pair in wanted)
        return found
