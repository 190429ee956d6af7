"""The production task store: MongoDB, one document per task, shaped exactly like Task.to_doc().

Every pymongo error is turned into StoreError, StoreRefused or DuplicateTask at the adapter's
edge (common.store.mongo.errors), so nothing above the adapters sees a pymongo type.

A compare-and-set is one `replace_one` filtered on TaskId and the expected Version: MongoDB applies
a single-document write atomically, so of two writers holding the same version exactly one
matches. Writes are w=majority + journal unless the URL opts out (common.store.mongo.client), so
an acknowledged change survives a crash of the server and a failover.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pymongo
from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.collection import Collection
from pymongo.errors import BulkWriteError, DuplicateKeyError

from common.errors import DuplicateTask, UnreadableTask
from common.engine.document import Alarm, HistoryEvent, Task
from common.engine.states import TaskStatus
from common.store.tasks import unreadable
from common.store.mongo import marks
from common.store.mongo.base import MongoAdapter, again
from common.store.mongo.client import PING_SECONDS
from common.store.mongo.errors import adapter_edge
from common.store.tasks.filters import ALL_TASKS, TaskFilter, mongo_query


def _no_id() -> dict[str, bool]:
    # A fresh projection each call: mongomock edits the one it is given (pops "_id" and puts it
    # back), so a shared dict breaks under threads.
    return {"_id": False, marks.FIELD: False}


Docs = Collection[dict[str, Any]]
_LISTING_ORDER = [("TimeCreate", DESCENDING), ("TaskId", DESCENDING)]
_adapter_edge = adapter_edge("mongodb", duplicate=DuplicateTask)


class MongoStore(MongoAdapter):
    """TaskStore on MongoDB (opening: common.store.mongo.base). The task store is what OSS opens,
    so it prepares the indexes of the whole database."""

    def __init__(self, url_or_client: str | Any, database: str = "baton", **options: Any):
        super().__init__(url_or_client, database, **options)
        # Claims, compare-and-sets and the sweeper's lock decide on what they read: the primary,
        # majority (MongoAdapter.latest), for every read of these.
        self._tasks: Docs = self.latest(self._db["tasks"])
        self._locks: Docs = self.latest(self._db["locks"])
        self._alarms: Docs = self._db["alarms"]
        self._history: Docs = self._db["task_history"]

    # --- tasks ---------------------------------------------------------------------------------

    @_adapter_edge
    def insert(self, task: Task) -> None:
        self.insert_versioned(self._tasks, {"TaskId": task.TaskId}, task.to_doc())

    @_adapter_edge
    def get(self, task_id: str) -> Task | None:
        return self._one(self._tasks.find_one({"TaskId": task_id}, _no_id()))

    @_adapter_edge
    def version_of(self, task_id: str) -> int | None:
        found = self._tasks.find_one({"TaskId": task_id}, {"_id": 0, "Version": 1})
        return None if found is None else int(found["Version"])

    @_adapter_edge
    def get_by_idempotency_key(self, key: str) -> Task | None:
        return self._one(self._tasks.find_one({"IdempotencyKey": key}, _no_id()))

    @_adapter_edge
    def compare_and_set(self, task: Task, expected_version: int) -> bool:
        if task.Version != expected_version + 1:
            raise ValueError(f"task.Version must be {expected_version + 1}, not {task.Version}")
        return self.write_versioned(self._tasks, {"TaskId": task.TaskId}, expected_version, task.to_doc())

    @_adapter_edge
    def due_for_sweep(self, now: float, limit: int) -> list[Task]:
        # Format 1 documents in flight have no SweepAt until their next write: their one run's
        # deadline finds them.
        query = {"$or": [{"SweepAt": {"$lte": now}}, {"Active.Deadline": {"$lte": now}}],
                 unreadable.MARK_FIELD: {"$exists": False}}
        return self._find_tasks(query, [("SweepAt", ASCENDING)], limit)

    @_adapter_edge
    def waiting_unclaimed(self, since_before: float, limit: int) -> list[Task]:
        query = {"Runs": {"$elemMatch": {"State": "pending", "Since": {"$lte": since_before}}}}
        return self._find_tasks(query, [("Runs.Since", ASCENDING)], limit)

    @_adapter_edge
    def unsent_outbox(self, due_before: float, limit: int) -> list[Task]:
        # OutboxDue: the earliest entry's DueAt (Task.to_doc); format 1 documents lack it.
        query = {"$or": [{"OutboxDue": {"$lte": due_before}},
                         {"OutboxDue": {"$exists": False}, "Outbox.DueAt": {"$lte": due_before}}],
                 unreadable.MARK_FIELD: {"$exists": False}}
        return self._find_tasks(query, [("OutboxDue", ASCENDING)], limit)

    def drop_sent(self, task_id: str, dispatch_id: str) -> bool:
        """Never in place here: a mark-sent is a compare-and-set, whose lost answers the adapter
        settles by its mark (docs/design/stores.md)."""
        return False

    def drop_sent_many(self, entries: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        return set()  # as drop_sent: none in place

    @_adapter_edge
    def in_outbox(self, entries: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        wanted = set(entries)
        if not wanted:
            return set()
        query = {"TaskId": {"$in": sorted({t for t, _ in wanted})},
                 "Outbox.DispatchId": {"$in": sorted({d for _, d in wanted})}}
        found: set[tuple[str, str]] = set()
        for doc in list(self._tasks.find(query, {"_id": False, "TaskId": True, "Outbox.DispatchId": True})):
            found.update((doc["TaskId"], e.get("DispatchId")) for e in doc.get("Outbox", []))
        return found & wanted

    @_adapter_edge
    @again  # an insert by number that skips what is stored: idempotent
    def archive_history(self, task_id: str, first_index: int, events: list[HistoryEvent]) -> None:
        if not events:
            return
        docs = [{"TaskId": task_id, "Index": first_index + n, "Event": e.model_dump(mode="json")}
                for n, e in enumerate(events)]
        try:
            self._history.insert_many(docs, ordered=False)
        except BulkWriteError as exc:  # written before (a lost race, a retry): the same events
            details = exc.details
            if details.get("writeConcernErrors") or any(
                error.get("code") != 11000 for error in details.get("writeErrors", [])
            ):
                raise

    @_adapter_edge
    @again
    def prune_history(self, before: float) -> int:
        return int(self._history.delete_many({"Event.Time": {"$lt": before}}).deleted_count)

    @_adapter_edge
    def archived_history(self, task_id: str, start: int, stop: int) -> list[HistoryEvent]:
        query = {"TaskId": task_id, "Index": {"$gte": start, "$lt": stop}}
        rows = list(self._history.find(query, _no_id()).sort("Index", ASCENDING))
        return [HistoryEvent.model_validate(row["Event"]) for row in rows]

    @_adapter_edge
    def list_tasks(self, task_filter: TaskFilter = ALL_TASKS, *, limit: int = 100) -> list[Task]:
        query = mongo_query(task_filter)
        return self._find_tasks(query, _LISTING_ORDER, limit, placeholders=True)

    @_adapter_edge
    def count_tasks(self, task_filter: TaskFilter) -> dict[TaskStatus, int]:
        groups = self._tasks.aggregate(
            [{"$match": mongo_query(task_filter)}, {"$group": {"_id": "$TaskStatus", "n": {"$sum": 1}}}]
        )
        return {TaskStatus(group["_id"]): group["n"] for group in groups}

    # --- locks ---------------------------------------------------------------------------------

    @_adapter_edge
    @again  # by owner: taking a lock we hold again only renews it
    def try_lock(self, name: str, owner: str, now: float, ttl: float) -> bool:
        # Matches only a lock that is ours or has lapsed; when none matches, the upsert tries to
        # insert a second document with the same _id, which the server refuses: held elsewhere.
        try:
            self._locks.find_one_and_update(
                {"_id": name, "$or": [{"expires": {"$lt": now}}, {"owner": owner}]},
                {"$set": {"owner": owner, "expires": now + ttl}},
                upsert=True,
            )
        except DuplicateKeyError:
            return False
        return True

    @_adapter_edge
    @again
    def release_lock(self, name: str, owner: str) -> None:
        self._locks.delete_one({"_id": name, "owner": owner})

    # --- alarms --------------------------------------------------------------------------------

    @_adapter_edge
    @again  # keyed by AlarmId: an alarm raised again is the same alarm
    def add_alarm(self, alarm: Alarm) -> bool:
        try:
            self._alarms.insert_one(alarm.model_dump(mode="json"))
        except DuplicateKeyError:
            return False
        return True

    @_adapter_edge
    def list_alarms(self, *, acknowledged: bool | None = None, limit: int = 100) -> list[Alarm]:
        if limit <= 0:
            return []
        query = {} if acknowledged is None else {"Acknowledged": acknowledged}
        cursor = self._alarms.find(query, _no_id()).sort("Time", DESCENDING).limit(limit)
        return [Alarm.model_validate(doc) for doc in cursor]

    @_adapter_edge
    @again  # the first acknowledgement stands
    def acknowledge_alarm(
        self, alarm_id: str, by: str, now: float, reason: str | None = None
    ) -> Alarm | None:
        """The first acknowledgement stands: acknowledging again returns the alarm unchanged."""
        done = {
            "Acknowledged": True, "AcknowledgedBy": by, "AcknowledgedAt": now, "AcknowledgedReason": reason,
        }  # fmt: skip
        doc = self._alarms.find_one_and_update(
            {"AlarmId": alarm_id, "Acknowledged": False},
            {"$set": done},
            projection=_no_id(),
            return_document=ReturnDocument.AFTER,
        )
        if doc is None:
            doc = self._alarms.find_one({"AlarmId": alarm_id}, _no_id())
        return None if doc is None else Alarm.model_validate(doc)

    # --- lifecycle -----------------------------------------------------------------------------

    @_adapter_edge
    def ping(self) -> None:
        """Can this store serve: the server answers AND takes a write (a replica set without a
        primary answers pings while refusing every write). One upsert of a lock of its own."""
        with pymongo.timeout(PING_SECONDS):  # server selection included: bounded even with the server gone
            self._client.admin.command("ping")
            self._locks.update_one({"_id": "baton-ping"}, {"$set": {"owner": "ping", "expires": time.time()}},
                                   upsert=True)  # fmt: skip

    # --- the parts -----------------------------------------------------------------------------

    def _find_tasks(
        self, query: dict[str, Any], order: list[tuple[str, int]], limit: int, placeholders: bool = False
    ) -> list[Task]:
        """A document that does not parse is skipped (a listing shows a placeholder) and reported
        (common.store.tasks.unreadable), never raised: the rest of the page or batch goes on."""
        if limit <= 0:
            return []  # limit(0) would mean "no limit" to MongoDB
        tasks = []
        for doc in list(self._tasks.find(query, _no_id()).sort(order).limit(limit)):
            task = self._parse(doc)
            if isinstance(task, Task):
                tasks.append(task)
            elif placeholders:
                tasks.append(unreadable.placeholder(
                    doc.get("TaskId"), doc.get("TaskType"), doc.get("TimeCreate"), doc.get("TaskStatus"), why=task))  # fmt: skip
        return tasks

    def _one(self, doc: dict[str, Any] | None) -> Task | None:
        if doc is None:
            return None
        task = self._parse(doc)
        if isinstance(task, Task):
            return task
        raise UnreadableTask(str(doc.get("TaskId")), task)

    def _parse(self, doc: dict[str, Any]) -> Task | str:
        """The document's task, or why it cannot be read (after marking and alarming it)."""
        try:
            return Task.from_doc({k: v for k, v in doc.items() if k != unreadable.MARK_FIELD})
        except Exception as exc:  # RecursionError, ValueError, ValidationError: all the same here
            why, mark = unreadable.reason(exc), unreadable.should_mark(exc)
        task_id = str(doc.get("TaskId"))
        if mark:  # out of the sweeper's queries; a replace of the document drops the mark
            self._tasks.update_one({"TaskId": task_id}, {"$set": {unreadable.MARK_FIELD: why}})
        unreadable.report(self.add_alarm, task_id, why, time.time())
        return why
