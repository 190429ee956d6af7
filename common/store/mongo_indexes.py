"""Every MongoDB index baton uses, in one place, and the three things done with them.

- `ensure` (OSS at start, `baton store init`): create the missing ones. An index of the same name
  but another definition is NOT replaced (rebuilding an index on a large collection is a job for
  an operator's quiet hour) and does not stop the process: it is reported, and
  `baton store migrate` replaces it.
- `check` (module processes at start): only compare, and report; creating indexes is OSS's job,
  and a command child never touches them (the adapters it opens pass indexes="none").
- `migrate` (`baton store migrate`): replace changed indexes, drop ones baton no longer uses,
  create missing ones.

A report is a list of plain sentences, e.g. "tasks.deadline: differs (...)"; empty means in order.
Created one by one with create_index: mongomock's create_indexes drops partialFilterExpression.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pymongo import ASCENDING, DESCENDING
from pymongo.database import Database
from pymongo.errors import ConnectionFailure

from common.errors import StoreError

IndexMode = Literal["create", "check", "none"]


@dataclass(frozen=True)
class IndexSpec:
    name: str
    keys: list[tuple[str, int]]
    options: dict[str, Any] = field(default_factory=dict)  # unique, partialFilterExpression

    def matches(self, info: dict[str, Any]) -> bool:
        """Whether an existing index (index_information()'s entry) is this one."""
        same_keys = [(k, int(d)) for k, d in info.get("key", [])] == self.keys
        same_options = all(info.get(name) == value for name, value in self.options.items())
        extra_unique = info.get("unique", False) and not self.options.get("unique", False)
        extra_filter = "partialFilterExpression" in info and "partialFilterExpression" not in self.options
        return same_keys and same_options and not extra_unique and not extra_filter


# Listings sort by (TimeCreate, TaskId) descending: each filtered listing's index ends in that
# pair, so the server walks the index in order instead of sorting in memory.
_NEWEST_FIRST = [("TimeCreate", DESCENDING), ("TaskId", DESCENDING)]
# Only unfinished tasks have an Active run with a deadline or an outbox entry: the sweeper's and
# relay's indexes hold those, not every task ever finished.
_UNFINISHED_DEADLINE = {"Active.Deadline": {"$exists": True}}
_UNSENT_OUTBOX = {"Outbox.DueAt": {"$exists": True}}
SWEEP_DUE = {"SweepAt": {"$type": "number"}}
OUTBOX_DUE = {"OutboxDue": {"$type": "number"}}
# Item records (common.store.items_mongo) use these two as well, and their relay's index holds
# only the records owing a notice: `$type` on an array matches its elements, so a record is in it
# exactly while `Owes` holds one. The queries repeat these filters, so the planner may use them.
ITEMS_OWING = {"Owes": {"$type": "string"}}
_ITEM_STEP = [("TaskId", ASCENDING), ("Generation", ASCENDING), ("Cursor", ASCENDING)]

SPECS: dict[str, list[IndexSpec]] = {
    "tasks": [
        IndexSpec("task_id", [("TaskId", ASCENDING)], {"unique": True}),
        # Only string keys are unique: any number of tasks may have no key (stored as null).
        IndexSpec(
            "idempotency_key",
            [("IdempotencyKey", ASCENDING)],
            {"unique": True, "partialFilterExpression": {"IdempotencyKey": {"$type": "string"}}},
        ),
        IndexSpec("time_id", _NEWEST_FIRST),
        IndexSpec("status_time_id", [("TaskStatus", ASCENDING), *_NEWEST_FIRST]),
        IndexSpec("type_time_id", [("TaskType", ASCENDING), *_NEWEST_FIRST]),
        IndexSpec("user_time_id", [("UserId", ASCENDING), *_NEWEST_FIRST]),
        # The sweeper's two: the earliest deadline of any run, the earliest outbox entry (DESIGN.md
        # 2, derived by Task.to_doc); null once there is none, so finished tasks stay out.
        IndexSpec("sweep_at", [("SweepAt", ASCENDING)], {"partialFilterExpression": SWEEP_DUE}),
        IndexSpec("outbox_due_at", [("OutboxDue", ASCENDING)], {"partialFilterExpression": OUTBOX_DUE}),
        # Format 1 documents in flight (one `Active` run, no SweepAt yet) until their next write.
        IndexSpec(
            "deadline", [("Active.Deadline", ASCENDING)], {"partialFilterExpression": _UNFINISHED_DEADLINE}
        ),
        IndexSpec("outbox_due", [("Outbox.DueAt", ASCENDING)], {"partialFilterExpression": _UNSENT_OUTBOX}),
        # waiting_unclaimed: only unfinished tasks have runs, hence a Since.
        IndexSpec("runs_since", [("Runs.Since", ASCENDING)], {"partialFilterExpression": {"Runs.Since": {"$exists": True}}}),
    ],
    # Events moved out of a task's document (common.engine.history), one per (task, event number).
    "task_history": [
        IndexSpec("task_index", [("TaskId", ASCENDING), ("Index", ASCENDING)], {"unique": True}),
        IndexSpec("time", [("Event.Time", ASCENDING)]),  # retention (oss.history_retention)
    ],
    "modules": [
        IndexSpec("module", [("Module", ASCENDING), ("WorkerId", ASCENDING)]),
    ],
    "alarms": [
        IndexSpec("alarm_id", [("AlarmId", ASCENDING)], {"unique": True}),
        IndexSpec("ack_time", [("Acknowledged", ASCENDING), ("Time", DESCENDING)]),
        IndexSpec("time", [("Time", DESCENDING)]),
    ],
    # One record per item of a for_each step (DESIGN.md 12.2); `_id` is the record's id.
    "task_items": [
        IndexSpec("item", [*_ITEM_STEP, ("Item", ASCENDING)], {"unique": True}),
        IndexSpec("open", [*_ITEM_STEP, ("Open", ASCENDING)]),  # "is any item of the step left?"
        # Ends in Item: a page of the step's records in some states walks it in item order.
        IndexSpec("state_item", [*_ITEM_STEP, ("State", ASCENDING), ("Item", ASCENDING)]),
        IndexSpec("sweep_at", [("SweepAt", ASCENDING)], {"partialFilterExpression": SWEEP_DUE}),
        IndexSpec("outbox_due_at", [("OutboxDue", ASCENDING)], {"partialFilterExpression": OUTBOX_DUE}),
        # Its own key (a server may refuse a second index on the unique one's): the few records
        # owing a notice at any time are sorted in memory.
        IndexSpec("owing", [("Owes", ASCENDING)], {"partialFilterExpression": ITEMS_OWING}),
    ],
    "module_drains": [
        IndexSpec("module", [("Module", ASCENDING)], {"unique": True}),
    ],
    "task_locks": [
        IndexSpec("key", [("Key", ASCENDING)], {"unique": True}),
    ],
    "schedules": [
        IndexSpec("schedule_id", [("ScheduleId", ASCENDING)], {"unique": True}),
        IndexSpec("name", [("Name", ASCENDING)], {"unique": True}),
        IndexSpec("due", [("Paused", ASCENDING), ("NextAt", ASCENDING)]),
    ],
    "events": [
        IndexSpec("event_id", [("EventId", ASCENDING)], {"unique": True}),
        IndexSpec("task_time", [("TaskId", ASCENDING), ("Time", DESCENDING)]),
        IndexSpec("time", [("Time", DESCENDING)]),
    ],
    "inventory_hosts": [
        # One key names one claim across all hosts (a unique multikey index spans documents).
        # Only documents holding a claim are indexed: hosts without any would collide on "missing".
        IndexSpec(
            "claim_key",
            [("claims.key", ASCENDING)],
            {"unique": True, "partialFilterExpression": {"claims.key": {"$exists": True}}},
        ),
        IndexSpec("claim_expiry", [("claims.state", ASCENDING), ("claims.expires_at", ASCENDING)]),
        IndexSpec("claim_closed", [("claims.state", ASCENDING), ("claims.updated_at", ASCENDING)]),
        IndexSpec("claim_holder", [("claims.holder", ASCENDING)]),
    ],
    # Closed claims, moved out of their host's document (see inventory_mongo).
    "inventory_closed_claims": [
        IndexSpec("holder", [("holder", ASCENDING)]),
        IndexSpec("released_by", [("released_by", ASCENDING)]),
        IndexSpec("updated_at", [("updated_at", ASCENDING)]),
    ],
    # Releases in progress or done, one per release key (see inventory_mongo.release).
    "inventory_releases": [],
}
# Names baton created once and no longer uses: `migrate` drops them.
OBSOLETE: dict[str, list[str]] = {
    "tasks": ["time", "status_time", "type_time", "user_time"],
    "inventory_hosts": ["claim_released_by"],
}


def check(db: Database[Any], collections: list[str] | None = None) -> list[str]:
    """What differs from SPECS, one sentence each; changes nothing."""
    problems = []
    for name in collections or list(SPECS):
        existing = db[name].index_information()
        for spec in SPECS[name]:
            info = existing.get(spec.name)
            if info is None:
                problems.append(f"{name}.{spec.name}: missing")
            elif not spec.matches(info):
                problems.append(f"{name}.{spec.name}: differs (found {_shown(info)}, want {_shown_spec(spec)})")
        for old in OBSOLETE.get(name, []):
            if old in existing and old not in {s.name for s in SPECS[name]}:
                problems.append(f"{name}.{old}: no longer used")
    return problems


def ensure(db: Database[Any], collections: list[str] | None = None) -> list[str]:
    """Create the missing indexes; report (not replace) the ones that differ. Returns the report
    of what is still not in order afterwards."""
    for name in collections or list(SPECS):
        existing = db[name].index_information()
        for spec in SPECS[name]:
            if spec.name not in existing:
                db[name].create_index(spec.keys, name=spec.name, **spec.options)
    return check(db, collections)


def migrate(db: Database[Any], collections: list[str] | None = None) -> list[str]:
    """Bring the indexes to SPECS: replace changed ones, drop obsolete ones, create missing ones.
    Returns what was done, one sentence each."""
    done = []
    for name in collections or list(SPECS):
        existing = db[name].index_information()
        for spec in SPECS[name]:
            info = existing.get(spec.name)
            if info is not None and not spec.matches(info):
                db[name].drop_index(spec.name)
                done.append(f"{name}.{spec.name}: dropped (changed definition)")
                info = None
            if info is None:
                db[name].create_index(spec.keys, name=spec.name, **spec.options)
                done.append(f"{name}.{spec.name}: created")
        for old in OBSOLETE.get(name, []):
            if old in existing and old not in {s.name for s in SPECS[name]}:
                db[name].drop_index(old)
                done.append(f"{name}.{old}: dropped (no longer used)")
    return done


def _shown(info: dict[str, Any]) -> str:
    extra = {k: v for k, v in info.items() if k in ("unique", "partialFilterExpression")}
    return f"{[(k, int(d)) for k, d in info.get('key', [])]} {extra or ''}".strip()


def _shown_spec(spec: IndexSpec) -> str:
    return f"{spec.keys} {spec.options or ''}".strip()


def migrate_reachable(database: Database) -> list[str]:
    """`migrate`, with a server that cannot be reached told apart (StoreError) from one that
    refuses a change (any other error): the CLI answers the first with its "unreachable" exit."""
    try:
        return migrate(database)
    except ConnectionFailure as exc:
        raise StoreError(f"mongodb: {exc}") from None
