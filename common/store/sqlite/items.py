"""Item records on SQLite (docs/design/item-records.md, "The item record"), table `task_items` in
the task store's file.

The record is stored as JSON; what a query filters or sorts on is copied into columns by the same
statement, so the two never drift apart. Every query is a search of one index (the step's prefix
`task_id, generation, cursor` first), never a scan of the table or of a whole step, except the
grouped count, which reads the step's entries of the state index (not its records).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Collection, Sequence
from typing import Any, ParamSpec, TypeVar

import pydantic_core

from common.engine.document import ItemRecord
from common.engine.states import StepState
from common.errors import StoreRefused
from common.store.items.paging import ItemPage, item_page
from common.store.items.port import check_next_version
from common.store.sqlite.codec import decode
from common.store.sqlite.connections import immediate
from common.store.sqlite.connections import LocalConnections, translated

_SCHEMA = """
CREATE TABLE IF NOT EXISTS task_items (
    task_id    TEXT NOT NULL,
    generation INTEGER NOT NULL,
    cursor     INTEGER NOT NULL,
    item       INTEGER NOT NULL,
    state      TEXT NOT NULL,
    open       INTEGER NOT NULL,
    sweep_at   REAL,
    outbox_due REAL,
    owes       INTEGER NOT NULL,
    version    INTEGER NOT NULL,
    doc        TEXT NOT NULL,
    PRIMARY KEY (task_id, generation, cursor, item)
);
CREATE INDEX IF NOT EXISTS task_items_open ON task_items (task_id, generation, cursor, open);
-- Ends in item: a page of the step's records in some states walks it in item order.
CREATE INDEX IF NOT EXISTS task_items_state ON task_items (task_id, generation, cursor, state, item);
CREATE INDEX IF NOT EXISTS task_items_sweep_at ON task_items (sweep_at) WHERE sweep_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS task_items_outbox_due ON task_items (outbox_due) WHERE outbox_due IS NOT NULL;
CREATE INDEX IF NOT EXISTS task_items_owing ON task_items (task_id, generation, cursor, item) WHERE owes = 1
"""
_STEP = "task_id = ? AND generation = ? AND cursor = ?"
_INSERT = """
INSERT INTO task_items (task_id, generation, cursor, item, state, open, sweep_at, outbox_due, owes, version, doc)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (task_id, generation, cursor, item) DO NOTHING
"""
_REPLACE = f"""
UPDATE task_items SET state = ?, open = ?, sweep_at = ?, outbox_due = ?, owes = ?, version = ?, doc = ?
WHERE {_STEP} AND item = ? AND version = ?
"""

P = ParamSpec("P")
R = TypeVar("R")


def _refusing(method: Callable[P, R]) -> Callable[P, R]:
    """As `translated`, and a record SQLite can never hold is refused for good (StoreRefused),
    as the Mongo store refuses it: text that is not valid Unicode, an integer column past 64 bits."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return translated(method)(*args, **kwargs)
        except pydantic_core.PydanticSerializationError as e:
            raise StoreRefused("sqlite refuses the item record: it cannot be encoded "
                               "(text that is not valid Unicode)") from e
        except OverflowError as e:
            raise StoreRefused("sqlite refuses the item record: an indexed number is past 64 bits") from e

    return wrapper


def _mutable_columns(record: ItemRecord) -> tuple[Any, ...]:
    """state, open, sweep_at, outbox_due, owes, version, doc: what a compare-and-set rewrites."""
    doc = record.to_json()  # first: it derives SweepAt and OutboxDue
    return (str(record.State), int(record.Open), record.SweepAt, record.OutboxDue, int(bool(record.Owes)),
            record.Version, doc)


class SqliteItemStore:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        self._conns = LocalConnections(self.path, _SCHEMA)

    @_refusing
    def insert_items(self, records: Sequence[ItemRecord]) -> int:
        rows = [(r.TaskId, r.Generation, r.Cursor, r.Item, *_mutable_columns(r)) for r in records]
        if not rows:
            return 0
        conn = self._conns.get()
        with immediate(conn):  # one batch, one commit: all of it or none
            cursor = conn.executemany(_INSERT, rows)
        return max(cursor.rowcount, 0)

    @_refusing
    def get_item(self, task_id: str, generation: int, cursor: int, item: int) -> ItemRecord | None:
        row = self._conns.get().execute(
            f"SELECT doc FROM task_items WHERE {_STEP} AND item = ?", (task_id, generation, cursor, item)
        ).fetchone()
        return ItemRecord.from_json(row[0]) if row else None

    @_refusing
    def compare_and_set_item(self, record: ItemRecord, expected_version: int) -> bool:
        check_next_version(record, expected_version)
        params = (*_mutable_columns(record), record.TaskId, record.Generation, record.Cursor, record.Item,
                  expected_version)
        return self._conns.get().execute(_REPLACE, params).rowcount == 1

    @_refusing
    def any_open(self, task_id: str, generation: int, cursor: int) -> bool:
        row = self._conns.get().execute(
            f"SELECT 1 FROM task_items WHERE {_STEP} AND open = 1 LIMIT 1", (task_id, generation, cursor)
        ).fetchone()
        return row is not None

    @_refusing
    def exists_in_states(self, task_id: str, generation: int, cursor: int, states: Collection[StepState]) -> bool:
        # One search of the state index per state: never a walk over the step's records.
        conn = self._conns.get()
        return any(conn.execute(f"SELECT 1 FROM task_items WHERE {_STEP} AND state = ? LIMIT 1",
                                (task_id, generation, cursor, str(state))).fetchone() for state in states)

    @_refusing
    def count_by_state(self, task_id: str, generation: int, cursor: int) -> dict[StepState, int]:
        rows = self._conns.get().execute(
            f"SELECT state, count(*) FROM task_items WHERE {_STEP} GROUP BY state", (task_id, generation, cursor)
        ).fetchall()
        return {StepState(state): count for state, count in rows}

    @_refusing
    def attempt_sums(self, task_id: str, generation: int, cursor: int) -> tuple[int, int]:
        row = self._conns.get().execute(
            "SELECT coalesce(sum(json_extract(doc, '$.Attempts')), 0), "
            f"coalesce(sum(json_extract(doc, '$.RollbackAttempts')), 0) FROM task_items WHERE {_STEP}",
            (task_id, generation, cursor),
        ).fetchone()
        return int(row[0]), int(row[1])

    @_refusing
    def page_items(self, task_id: str, generation: int, cursor: int, *, after: int | None = None,
                   limit: int = 100, states: Collection[StepState] | None = None,
                   modulus: int | None = None, residue: int | None = None) -> list[ItemRecord]:
        page = item_page(after, limit, states, modulus, residue)
        if page is None:
            return []
        sql, params = _page_query(page, (task_id, generation, cursor))
        rows = self._conns.get().execute(sql, params).fetchall()
        return [ItemRecord.from_json(doc) for (doc,) in rows]

    @_refusing
    def page_failed(self, task_id: str, generation: int, cursor: int, *, after: int | None = None,
                    limit: int = 100) -> list[ItemRecord]:
        if limit <= 0:
            return []
        rows = self._conns.get().execute(
            # A succeeded record's normal phase ended well: passed on its state column, its
            # document never parsed (a step of 100,000 items mostly holds those).
            f"SELECT doc FROM task_items WHERE {_STEP} AND item > ? AND state != 'succeeded' "
            "AND json_extract(doc, '$.Code') != 0 "
            "ORDER BY item LIMIT ?", (task_id, generation, cursor, -1 if after is None else after, limit),
        ).fetchall()  # a Code left out (None) is NULL: never != 0
        return [ItemRecord.from_json(doc) for (doc,) in rows]

    @_refusing
    def outputs(self, task_id: str, generation: int, cursor: int) -> list[dict[str, Any]]:
        rows = self._conns.get().execute(
            f"SELECT json_extract(doc, '$.Output') FROM task_items WHERE {_STEP} ORDER BY item",
            (task_id, generation, cursor),
        ).fetchall()
        return [decode(output) for (output,) in rows]

    @_refusing
    def due_for_sweep(self, now: float, limit: int) -> list[ItemRecord]:
        return self._records("sweep_at IS NOT NULL AND sweep_at <= ? ORDER BY sweep_at", (now,), limit)

    @_refusing
    def unsent_outbox(self, due_before: float, limit: int) -> list[ItemRecord]:
        return self._records("outbox_due IS NOT NULL AND outbox_due <= ? ORDER BY outbox_due", (due_before,), limit)

    @_refusing
    def owing(self, limit: int) -> list[ItemRecord]:
        return self._records("owes = 1 ORDER BY task_id, generation, cursor, item", (), limit)

    @_refusing
    def delete_task_items(self, task_id: str) -> int:
        return self._conns.get().execute("DELETE FROM task_items WHERE task_id = ?", (task_id,)).rowcount

    def close(self) -> None:
        self._conns.close()

    def _records(self, where_order: str, params: tuple[Any, ...], limit: int) -> list[ItemRecord]:
        if limit <= 0:
            return []
        rows = self._conns.get().execute(
            f"SELECT doc FROM task_items WHERE {where_order} LIMIT ?", (*params, limit)
        ).fetchall()
        return [ItemRecord.from_json(doc) for (doc,) in rows]


def _page_query(page: ItemPage, step: tuple[str, int, int]) -> tuple[str, tuple[Any, ...]]:
    """One statement for the page. A states filter is one search of the state index per state,
    each limited, merged by item: so the page reads at most `limit` entries per state."""
    chain = page.chain_items
    if chain is not None:  # point look-ups on the primary key
        marks = ", ".join("?" * len(chain))
        return f"SELECT doc FROM task_items WHERE {_STEP} AND item IN ({marks}) ORDER BY item", (*step, *chain)
    in_chain = " AND item % ? = ?" if page.modulus is not None else ""
    chain_params = (page.modulus, page.residue) if page.modulus is not None else ()
    if page.states is None:
        sql = f"SELECT doc FROM task_items WHERE {_STEP} AND item >= ?{in_chain} ORDER BY item LIMIT ?"
        return sql, (*step, page.first, *chain_params, page.limit)
    one_state = (f"SELECT * FROM (SELECT item, doc FROM task_items WHERE {_STEP} AND state = ? AND item >= ?"
                 f"{in_chain} ORDER BY item LIMIT ?)")
    sql = " UNION ALL ".join([one_state] * len(page.states))
    params: list[Any] = []
    for state in page.states:
        params += [*step, str(state), page.first, *chain_params, page.limit]
    return f"SELECT doc FROM ({sql}) ORDER BY item LIMIT ?", (*params, page.limit)
