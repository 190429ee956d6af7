"""Item records on MongoDB (docs/design/item-records.md, "The item record"): collection `task_items`
in the task store's database, `_id` = the record's id, one document shaped like
`ItemRecord.to_doc()`.

A compare-and-set is one `replace_one` filtered on `_id` and `Version` (a single-document write is
atomic, so of two writers holding one version exactly one matches). Every query names the step's
prefix `TaskId, Generation, Cursor` and is answered by one of the indexes in
common.store.mongo.indexes (SPECS["task_items"]), each partial filter repeated in the query so the
planner may use it.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Collection, Sequence
from typing import Any

from pymongo import ASCENDING
from pymongo.errors import BulkWriteError

from common.engine.document import ItemRecord, item_record_id
from common.engine.states import StepState
from common.store.items.paging import ItemPage, item_page
from common.store.items.port import check_next_version
from common.store.mongo import marks
from common.store.mongo.base import MongoAdapter, again
from common.store.mongo.errors import adapter_edge
from common.store.mongo.indexes import ITEMS_OWING, OUTBOX_DUE, SWEEP_DUE

COLLECTION = "task_items"
DUPLICATE_KEY = 11000
_ITEM_ORDER = [("Item", ASCENDING)]
_STEP_ORDER = [("TaskId", ASCENDING), ("Generation", ASCENDING), ("Cursor", ASCENDING), ("Item", ASCENDING)]
_edge = adapter_edge("mongodb task items")  # errors translated; alone on mongomock


def _doc(record: ItemRecord) -> dict[str, Any]:
    return {"_id": record.record_id, **record.to_doc()}


def _record(doc: dict[str, Any]) -> ItemRecord:
    return ItemRecord.from_doc({k: v for k, v in doc.items() if k != marks.FIELD})


def _step(task_id: str, generation: int, cursor: int) -> dict[str, Any]:
    return {"TaskId": task_id, "Generation": generation, "Cursor": cursor}


class MongoItemStore(MongoAdapter):
    WHAT = "mongodb task items"
    COLLECTIONS = [COLLECTION]

    def __init__(self, url_or_client: str | Any, database: str = "baton", **options: Any):
        super().__init__(url_or_client, database, **options)
        self._items = self.latest(self._db[COLLECTION])  # the primary, majority: writes decide on it

    @_edge
    @again  # records stored already are skipped: idempotent
    def insert_items(self, records: Sequence[ItemRecord]) -> int:
        if not records:
            return 0
        try:
            return len(self._items.insert_many([_doc(r) for r in records], ordered=False).inserted_ids)
        except BulkWriteError as exc:  # inserted before (a repeated batch): left as they are
            details = exc.details
            if details.get("writeConcernErrors") or any(
                error.get("code") != DUPLICATE_KEY for error in details.get("writeErrors", [])
            ):
                raise
            return int(details.get("nInserted", 0))

    @_edge
    def get_item(self, task_id: str, generation: int, cursor: int, item: int) -> ItemRecord | None:
        doc = self._items.find_one({"_id": item_record_id(task_id, generation, cursor, item)})
        return _record(doc) if doc else None

    @_edge
    def compare_and_set_item(self, record: ItemRecord, expected_version: int) -> bool:
        check_next_version(record, expected_version)
        return self.write_versioned(self._items, {"_id": record.record_id}, expected_version, _doc(record))

    @_edge
    def any_open(self, task_id: str, generation: int, cursor: int) -> bool:
        # Projected on the index's own fields: answered from the index, no document read.
        projection = {"_id": False, "TaskId": True, "Open": True}
        return self._items.find_one({**_step(task_id, generation, cursor), "Open": True}, projection) is not None

    @_edge
    def exists_in_states(self, task_id: str, generation: int, cursor: int, states: Collection[StepState]) -> bool:
        query = {**_step(task_id, generation, cursor), "State": {"$in": [str(state) for state in states]}}
        return self._items.find_one(query, {"_id": False, "TaskId": True, "State": True}) is not None

    @_edge
    def count_by_state(self, task_id: str, generation: int, cursor: int) -> dict[StepState, int]:
        pipeline = [{"$match": _step(task_id, generation, cursor)}, {"$group": {"_id": "$State", "n": {"$sum": 1}}}]
        return {StepState(row["_id"]): int(row["n"]) for row in self._items.aggregate(pipeline)}

    @_edge
    def attempt_sums(self, task_id: str, generation: int, cursor: int) -> tuple[int, int]:
        group = {"_id": None, "a": {"$sum": "$Attempts"}, "r": {"$sum": "$RollbackAttempts"}}  # a field left out adds 0
        rows = list(self._items.aggregate([{"$match": _step(task_id, generation, cursor)}, {"$group": group}]))
        return (int(rows[0]["a"]), int(rows[0]["r"])) if rows else (0, 0)

    @_edge
    def page_items(self, task_id: str, generation: int, cursor: int, *, after: int | None = None,
                   limit: int = 100, states: Collection[StepState] | None = None,
                   modulus: int | None = None, residue: int | None = None) -> list[ItemRecord]:
        page = item_page(after, limit, states, modulus, residue)
        if page is None:
            return []
        step = _step(task_id, generation, cursor)
        # One query per state, each limited, merged by item: one equality and one range on the
        # state index each, which every server's planner answers from the index.
        queries = [{**step, **query} for query in _page_filters(page)]
        if page.modulus is not None and page.chain_items is None:
            chain = list(itertools.islice(heapq.merge(*(self._chain_items(q, page) for q in queries)), page.limit))
            if not chain:
                return []
            queries = [{**step, "Item": {"$in": chain}}]
        pages = [self._items.find(query).sort(_ITEM_ORDER).limit(page.limit) for query in queries]
        merged = heapq.merge(*pages, key=lambda doc: doc["Item"]) if len(pages) > 1 else pages[0]
        return [_record(d) for d in itertools.islice(merged, page.limit)]

    def _chain_items(self, query: dict[str, Any], page: ItemPage) -> list[int]:
        """The first items of the chain the query matches. The index entries are read, not the
        records (the projection is covered), and the other chains' entries in between skipped
        here: a `$mod` or `$expr` filter would keep some planners off the index."""
        found: list[int] = []
        with self._items.find(query, {"_id": False, "Item": True}).sort(_ITEM_ORDER) as entries:
            for entry in entries:
                if entry["Item"] % page.modulus == page.residue:  # type: ignore[operator]
                    found.append(entry["Item"])
                    if len(found) == page.limit:
                        break
        return found

    @_edge
    def page_failed(self, task_id: str, generation: int, cursor: int, *, after: int | None = None,
                    limit: int = 100) -> list[ItemRecord]:
        if limit <= 0:
            return []
        query = {**_step(task_id, generation, cursor), "Item": {"$gt": -1 if after is None else after},
                 "Code": {"$nin": [None, 0]}}  # a Code left out matches None
        # The step's records in item order (the unique index), the Code judged on each: a planner
        # left to itself may scan the collection for a filter on an unindexed field.
        found = self._items.find(query).sort(_ITEM_ORDER).hint("item").limit(limit)
        return [_record(d) for d in found]

    @_edge
    def outputs(self, task_id: str, generation: int, cursor: int) -> list[dict[str, Any]]:
        docs = self._items.find(_step(task_id, generation, cursor), {"_id": False, "Item": True, "Output": True})
        return [d.get("Output", {}) for d in docs.sort(_ITEM_ORDER)]

    @_edge
    def due_for_sweep(self, now: float, limit: int) -> list[ItemRecord]:
        query = {"SweepAt": {**SWEEP_DUE["SweepAt"], "$lte": now}}
        return self._find(query, [("SweepAt", ASCENDING)], limit)

    @_edge
    def unsent_outbox(self, due_before: float, limit: int) -> list[ItemRecord]:
        query = {"OutboxDue": {**OUTBOX_DUE["OutboxDue"], "$lte": due_before}}
        return self._find(query, [("OutboxDue", ASCENDING)], limit)

    @_edge
    def owing(self, limit: int) -> list[ItemRecord]:
        return self._find(dict(ITEMS_OWING), _STEP_ORDER, limit)

    @_edge
    @again
    def delete_task_items(self, task_id: str) -> int:
        return int(self._items.delete_many({"TaskId": task_id}).deleted_count)

    def _find(self, query: dict[str, Any], order: list[tuple[str, int]], limit: int) -> list[ItemRecord]:
        if limit <= 0:
            return []
        return [_record(d) for d in self._items.find(query).sort(order).limit(limit)]


def _page_filters(page: ItemPage) -> list[dict[str, Any]]:
    """The page's filters beyond the step, one per state asked for: a chain's next items by value
    when known (point look-ups on the unique index), else a range of items (of which a chain's
    are picked by `_chain_items`)."""
    chain = page.chain_items
    if chain is not None:
        return [{"Item": {"$in": chain}}]
    query: dict[str, Any] = {"Item": {"$gte": page.first}}
    if page.states is None:
        return [query]
    return [{**query, "State": str(state)} for state in page.states]
