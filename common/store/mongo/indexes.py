"""Every MongoDB index baton uses, in one place (a module adds its own collections' through its
`mongo_indexes` hook), and the three things done with them.

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
from common.module_hooks import module_hooks
from common.store.factory import adapter_class
from common.store.gates import gate_tables

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
# Item records (common.store.mongo.items) use these two as well, and their relay's index holds
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
        # The sweeper's two: the earliest deadline of any run, the earliest outbox entry
        # (docs/design/task-document.md, derived by Task.to_doc); null once there is none, so
        # finished tasks stay out.
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
    # Events moved out of a task's document (common.engine.core.history), one per (task, event number).
    "task_history": [
        IndexSpec("task_index", [("TaskId", ASCENDING), ("Index", ASCENDING)], {"unique": True}),
        # retention (oss.services.history_retention)
        IndexSpec("time", [("Event.Time", ASCENDING)]),
    ],
    "modules": [
        IndexSpec("module", [("Module", ASCENDING), ("WorkerId", ASCENDING)]),
    ],
    "alarms": [
        IndexSpec("alarm_id", [("AlarmId", ASCENDING)], {"unique": True}),
        IndexSpec("ack_time", [("Acknowledged", ASCENDING), ("Time", DESCENDING)]),
        IndexSpec("time", [("Time", DESCENDING)]),
    ],
    # One record per item of a for_each step (docs/design/item-records.md, "The item record"); `_id`
    # is the record's id.
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
}
# Names baton created once and no longer uses: `migrate` drops them.
OBSOLETE: dict[str, list[str]] = {
    "tasks": ["time", "status_time", "type_time", "user_time"],
}


@dataclass(frozen=True)
class ModuleIndexes:
    """A module's own collections' indexes (what its `mongo_indexes` hook returns, common.module_hooks): the
    resource inventory's. `baton store init` and `migrate` treat them as baton's own."""

    specs: dict[str, list[IndexSpec]]
    obsolete: dict[str, list[str]] = field(default_factory=dict)


def catalog() -> ModuleIndexes:
    """Every index baton uses: SPECS and OBSOLETE with each gate's own table's (common.store.gates)
    and each module's added."""
    merged = ModuleIndexes(dict(SPECS), dict(OBSOLETE))
    for table in gate_tables():
        if table.mongo_indexes is not None:
            merged.specs.update(adapter_class(table.mongo_indexes))
    for offered in (indexes() for indexes in module_hooks("mongo_indexes")):
        merged.specs.update(offered.specs)
        merged.obsolete.update(offered.obsolete)
    return merged


def check(db: Database[Any], collections: list[str] | None = None) -> list[str]:
    """What differs from the catalog, one sentence each; changes nothing."""
    problems = []
    known = catalog()
    for name in collections or list(known.specs):
        existing = db[name].index_information()
        for spec in known.specs[name]:
            info = existing.get(spec.name)
            if info is None:
                problems.append(f"{name}.{spec.name}: missing")
            elif not spec.matches(info):
                problems.append(f"{name}.{spec.name}: differs (found {_shown(info)}, want {_shown_spec(spec)})")
        for old in known.obsolete.get(name, []):
            if old in existing and old not in {s.name for s in known.specs[name]}:
                problems.append(f"{name}.{old}: no longer used")
    return problems


def ensure(db: Database[Any], collections: list[str] | None = None) -> list[str]:
    """Create the missing indexes; report (not replace) the ones that differ. Returns the report
    of what is still not in order afterwards."""
    specs = catalog().specs
    for name in collections or list(specs):
        existing = db[name].index_information()
        for spec in specs[name]:
            if spec.name not in existing:
                db[name].create_index(spec.keys, name=spec.name, **spec.options)
    return check(db, collections)


def migrate(db: Database[Any], collections: list[str] | None = None) -> list[str]:
    """Bring the indexes to the catalog: replace changed ones, drop obsolete ones, create missing
    ones. Returns what was done, one sentence each."""
    done = []
    known = catalog()
    for name in collections or list(known.specs):
        existing = db[name].index_information()
        for spec in known.specs[name]:
            info = existing.get(spec.name)
            if info is not None and not spec.matches(info):
                db[name].drop_index(spec.name)
                done.append(f"{name}.{spec.name}: dropped (changed definition)")
                info = None
            if info is None:
                db[name].create_index(spec.keys, name=spec.name, **spec.options)
                done.append(f"{name}.{spec.name}: created")
        for old in known.obsolete.get(name, []):
            if old in existing and old not in {s.name for s in known.specs[name]}:
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
