"""A task's views (the task, its events, its items, an action's answer, a dry run's plan) as a
token limited to namespaces may see them (docs/design/access.md): other tasks they name appear
by id only when in the token's scope, "another namespace's task" otherwise."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel

from common.engine.document import Task
from common.errors import UnreadableTask
from common.store.tasks.port import TaskStore
from oss.api.access import sees
from oss.services.plans import Plan
from oss.settings import ApiToken

M = TypeVar("M", bound=BaseModel)
OTHERS = "another namespace's task"


def plan_shown(store: TaskStore, token: ApiToken, plan: Plan) -> str:
    """A dry run's plan as the token may see it: a lock key held by a task outside its namespaces
    still says it is held (the new task would wait), but not by which task; a rate whose key is
    shared with other namespaces still says whether a start slot is free and, when none is, when
    the next frees, but not how many are left (a count of every namespace's starts)."""
    if token.scope is None:
        return plan.model_dump_json()
    if plan.rate is not None and plan.rate.slots_left:
        plan = plan.model_copy(update={"rate": plan.rate.model_copy(update={"slots_left": None})})
    holders = {h for lock in plan.locks for h in lock.holders}
    return _without(plan.model_dump_json(), [i for i in holders if not sees(token, _readable(store, i))])


def _without(text: str, hidden: list[str]) -> str:
    """`text` with every mention of these task ids (a field, or words of a message such as
    "child task <id> failed") as OTHERS: whole ids only, the longest first, so an id that starts
    another (a child's "<parent>.1" and "<parent>.10") is never cut."""
    if not hidden:
        return text
    ids = "|".join(re.escape(i) for i in sorted(hidden, key=len, reverse=True))
    return re.sub(rf"(?<![0-9A-Za-z_.:-])(?:{ids})(?![0-9A-Za-z_.:-])", OTHERS, text)


_ONE_REF = ("AfterTask", "ChildTaskId", "Child")  # keys of a task view that name another task
_MANY_REFS = ("AwaitedBy", "Children")
_NESTED_REF = ("Parent", "WaitingFor")  # their TaskId
MAX_REF_READS = 200  # tasks read to judge the references of one view; any beyond are not shown


def _refs(node: Any, found: list[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ONE_REF and isinstance(value, str):
                found.append(value)
            elif key in _MANY_REFS and isinstance(value, list):
                found.extend(v for v in value if isinstance(v, str))
            elif key in _NESTED_REF and isinstance(value, dict) and isinstance(value.get("TaskId"), str):
                found.append(value["TaskId"])
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def view_shown(store: TaskStore, token: ApiToken, view: M) -> M:
    """A view of a task in scope (the task, a page of its items) as the token may see it: the ids
    of other tasks it names (the task it waits for, those waiting for it, its parent, its
    children) are shown only for tasks in scope; another is "another namespace's task"."""
    if token.scope is None:
        return view
    text = view.model_dump_json()
    found: list[str] = []
    _refs(json.loads(text), found)
    own = getattr(view, "TaskId", None)
    named = [i for i in dict.fromkeys(found) if i != own]
    hidden = [i for n, i in enumerate(named) if n >= MAX_REF_READS or not sees(token, _readable(store, i))]
    return view if not hidden else type(view).model_validate_json(_without(text, hidden))


def _readable(store: TaskStore, task_id: str) -> Task | None:
    try:
        return store.get(task_id)
    except UnreadableTask:
        return None
