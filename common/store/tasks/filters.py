"""Which tasks a listing asks for, and where a page ends: one description, translated for each
store (SQL for SQLite, a query document for MongoDB), so both answer alike.

Listings are newest first: TimeCreate descending, then TaskId descending. That is a total order,
so a page boundary is exact: the next page starts strictly after the (TimeCreate, TaskId) of the
last task of the previous one ("keyset" paging). A task created meanwhile is newer than every
page already served, so it never shifts a later page: nothing is skipped or repeated.

The cursor handed to clients is that key, `<TimeCreate>~<TaskId as UTF-8 hex>`: opaque to them,
and checked on the way back in (a tampered cursor is a client error, never a crash). Its form is
one pattern (CURSOR_PATTERN, published in the OpenAPI document), and every string matching it
decodes: the time is a finite float, the id any bytes (a garbage id is only a harmless bound).

`search` is what an operator types in the console's search box: a task whose TaskId starts
with it, or whose task type, message or one of its labels (as "key=value") contains it,
ignoring case (ASCII). The text filters are scans: fine for an operator's query, not a hot path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from common.engine.states import TaskStatus

if TYPE_CHECKING:  # the filters build queries without the document model (oss/cli/quick_reads.py)
    from common.access import Scope
    from common.engine.document import Task

PageKey = tuple[float, str]  # (TimeCreate, TaskId) of the last task of a page


@dataclass(frozen=True)
class TaskFilter:
    status: TaskStatus | None = None
    task_type: str | None = None
    user_id: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)  # every pair must match
    created_from: float | None = None  # TimeCreate >= created_from
    created_to: float | None = None  # TimeCreate < created_to
    after: PageKey | None = None  # only tasks after this key in listing order
    search: str | None = None  # TaskId prefix, or text in type, message or a label
    scope: Scope | None = None  # only tasks in one of these namespaces (common/access.py); None: all
    failed_items: bool = False  # only tasks that ended with items failed within a budget

    def __post_init__(self) -> None:
        # a copy of the labels asked for (None: no label filter): the filter stays as it was made
        object.__setattr__(self, "labels", dict(self.labels or {}))


ALL_TASKS = TaskFilter()


def sql_where(f: TaskFilter) -> tuple[str, list[Any]]:
    """A WHERE clause ("" when nothing is filtered) and its parameters, for the tasks table."""
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in (("status", f.status), ("task_type", f.task_type), ("user_id", f.user_id)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(int(value) if isinstance(value, TaskStatus) else value)
    if f.created_from is not None:
        clauses.append("time_create >= ?")
        params.append(f.created_from)
    if f.created_to is not None:
        clauses.append("time_create < ?")
        params.append(f.created_to)
    if f.after is not None:
        clauses.append("(time_create, task_id) < (?, ?)")  # a row value: uses the index
        params.extend(f.after)
    for key, value in f.labels.items():
        clauses.append(
            "EXISTS (SELECT 1 FROM json_each(tasks.doc, '$.Labels') AS l"
            " WHERE l.key = ? AND l.value = ?)"
        )
        params.extend((key, value))
    if f.failed_items:
        clauses.append("json_extract(doc, '$.FailedItems') > 0")
    if f.search:
        clauses.append(
            "(instr(lower(task_id), lower(?)) = 1 OR instr(lower(task_type), lower(?)) > 0"
            " OR instr(lower(json_extract(doc, '$.TaskMessage')), lower(?)) > 0"
            " OR EXISTS (SELECT 1 FROM json_each(tasks.doc, '$.Labels') AS l"
            " WHERE instr(lower(l.key || '=' || l.value), lower(?)) > 0))"
        )
        params.extend([f.search] * 4)
    if f.scope is not None:
        clauses.append(_sql_scope(f.scope, params))
    return (f"WHERE {' AND '.join(clauses)}" if clauses else ""), params


# A label by its path: a scope's label keys are the API's (letters, digits, _/-: nothing to quote
# but the key itself), and one json_extract costs a fifth of a json_each scan of the labels.
_SQL_LABEL = "json_extract(tasks.doc, ?) = ?"


def _sql_scope(scope: Scope, params: list[Any]) -> str:
    """A task is in one namespace or another, each of its types and every label of its selector."""
    held = []
    for namespace in scope:
        parts = []
        if namespace.task_types:
            parts.append(f"task_type IN ({', '.join('?' * len(namespace.task_types))})")
            params.extend(sorted(namespace.task_types))
        for key, value in namespace.labels.items():
            parts.append(_SQL_LABEL)
            params.extend((f'$.Labels."{key}"', value))
        held.append("(" + " AND ".join(parts or ["1"]) + ")")
    return "(" + " OR ".join(held or ["0"]) + ")"


def _mongo_scope(scope: Scope) -> dict[str, Any]:
    held: list[dict[str, Any]] = []
    for namespace in scope:
        part: dict[str, Any] = {f"Labels.{key}": value for key, value in namespace.labels.items()}
        if namespace.task_types:
            part["TaskType"] = {"$in": sorted(namespace.task_types)}
        held.append(part)
    return {"$or": held} if held else {"TaskId": {"$in": []}}


def mongo_query(f: TaskFilter) -> dict[str, Any]:
    clauses: list[dict[str, Any]] = []
    for name, value in (("TaskStatus", f.status), ("TaskType", f.task_type), ("UserId", f.user_id)):
        if value is not None:
            clauses.append({name: int(value) if isinstance(value, TaskStatus) else value})
    if f.created_from is not None:
        clauses.append({"TimeCreate": {"$gte": f.created_from}})
    if f.created_to is not None:
        clauses.append({"TimeCreate": {"$lt": f.created_to}})
    if f.after is not None:
        time, task_id = f.after
        clauses.append(
            {"$or": [{"TimeCreate": {"$lt": time}}, {"TimeCreate": time, "TaskId": {"$lt": task_id}}]}
        )
    for key, value in f.labels.items():
        if "." in key or key.startswith("$"):
            raise ValueError(f"label key {key!r}: MongoDB cannot query a key with '.' or a leading '$'")
        clauses.append({f"Labels.{key}": value})
    if f.failed_items:
        clauses.append({"FailedItems": {"$gt": 0}})
    if f.search:
        clauses.append(_mongo_search(f.search))
    if f.scope is not None:
        clauses.append(_mongo_scope(f.scope))
    return {"$and": clauses} if clauses else {}


def _mongo_search(text: str) -> dict[str, Any]:
    """The same match as sql_where's search, as a MongoDB query (4.2+: $regexMatch)."""
    inside = {"$regex": re.escape(text), "$options": "i"}
    label_matches = {
        "$filter": {
            "input": {"$objectToArray": {"$ifNull": ["$Labels", {}]}},
            "cond": {
                "$regexMatch": {
                    "input": {"$concat": ["$$this.k", "=", "$$this.v"]},
                    "regex": re.escape(text),
                    "options": "i",
                }
            },
        }
    }
    return {
        "$or": [
            {"TaskId": {"$regex": "^" + re.escape(text), "$options": "i"}},
            {"TaskType": inside},
            {"TaskMessage": inside},
            {"$expr": {"$gt": [{"$size": label_matches}, 0]}},
        ]
    }


def search_matches(task: Task, text: str) -> bool:
    """The search filter in Python, on a task as shown: the API drops a task the store matched
    only through a secret its view masks (a search must not confirm a secret's value)."""
    folded = text.lower()
    fields = [task.TaskType, task.TaskMessage, *(f"{k}={v}" for k, v in task.Labels.items())]
    return task.TaskId.lower().startswith(folded) or any(folded in f.lower() for f in fields)


def page_key(task: Task) -> PageKey:
    return (task.TimeCreate, task.TaskId)


# repr(float) round-trips exactly; at most 20 digits each side and a 2-digit exponent keep every
# match finite (times are years 1 to 9999, far inside that).
CURSOR_PATTERN = r"^-?[0-9]{1,20}(\.[0-9]{1,20})?(e[-+][0-9]{2})?~([0-9a-f]{2}){0,512}$"
_CURSOR = re.compile(CURSOR_PATTERN)


def encode_cursor(key: PageKey) -> str:
    return f"{float(key[0])!r}~{key[1].encode('utf-8', 'surrogatepass').hex()}"


def decode_cursor(cursor: str) -> PageKey:
    """The key a cursor holds; ValueError for anything not of the cursor's form."""
    if not _CURSOR.fullmatch(cursor):
        raise ValueError("not a cursor this API handed out")
    time, task_id = cursor.split("~", 1)
    return (float(time), bytes.fromhex(task_id).decode("utf-8", "replace"))
