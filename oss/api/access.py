"""What a token may see and do, task by task (docs/design/access.md): the routes' side of scoped
tokens. Outside a token's namespaces a task, alarm, lock holder or schedule does not exist: the
answer is the one for an id that names nothing (404, the same words), never a 403 that would tell
it exists. Inside, a role below what the route needs is a 403.

What a task in scope names of other tasks: oss/api/scoped_views.py. `GET /api/v1/access`:
oss/api/routers/access.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import structlog

from common.access import Scope, at_least, labels_asked, may_hold_type, role_on, with_role
from common.engine.document import Task
from common.errors import ConfigError, IdempotencyConflict, UnknownAwaitedTask, UnknownTaskType, UnreadableTask
from common.store.tasks.port import TaskStore
from oss.api.errors import ApiError
from oss.settings import ApiToken, Role

NO_TASK = "no such task"  # word for word what a missing id gets
log = structlog.get_logger(__name__)


def scope_for(token: ApiToken, role: Role = "read") -> Scope | None:
    """The namespaces a listing for `role` covers; None: every task (an unscoped token)."""
    return None if token.scope is None else with_role(token.scope, role)


def role_of(token: ApiToken, task_type: str, labels: Mapping[str, str]) -> Role | None:
    """The token's role on such a task; None: outside its namespaces."""
    return token.role if token.scope is None else role_on(token.scope, task_type, labels)


def sees(token: ApiToken, task: Task | None, needed: Role = "read") -> bool:
    """Whether the token may do what needs `needed` on the task (False: missing or outside)."""
    role = None if task is None else role_of(token, task.TaskType, task.Labels)
    return role is not None and at_least(role, needed)


def visible(token: ApiToken, task: Task | None, needed: Role = "read") -> Task:
    """The task if the token may do what needs `needed` on it: else 404 (outside, or missing)
    or 403 (inside, with too low a role)."""
    role = None if task is None else role_of(token, task.TaskType, task.Labels)
    if task is not None and role is None:  # the caller is told nothing; the operators' log says who asked
        log.info("a task outside the token's namespaces was asked for", actor=token.name, task_id=task.TaskId)
    if task is None or role is None:
        raise ApiError(404, NO_TASK)  # the id asked for is not echoed
    if not at_least(role, needed):
        raise ApiError(403, f"{token.name} has the {role} role on this task; this needs {needed}")
    return task


def read_visible(store: TaskStore, token: ApiToken, task_id: str, needed: Role = "read") -> Task:
    """`visible` of the stored task. A document that cannot be read has no type or labels to
    judge by: a scoped token is told there is no such task (the alarm goes to the others)."""
    try:
        task = store.get(task_id)
    except UnreadableTask:
        if token.scope is None:
            raise
        task = None
    return visible(token, task, needed)


def may_create(token: ApiToken, task_type: str, labels: Mapping[str, str], needed: Role = "submit") -> None:
    """A new task (or a schedule's tasks) of this type and labels: refused as an unknown task
    type when no namespace can hold the type, 403 naming the labels asked for otherwise."""
    if token.scope is None:
        return
    if not may_hold_type(token.scope, task_type):
        raise UnknownTaskType(task_type)  # the answer for a type flows.yaml lacks: no hint it exists
    role = role_on(token.scope, task_type, labels)
    if role is None or not at_least(role, needed):
        asked = labels_asked(token.scope, task_type, needed)
        wanted = " or ".join(", ".join(f"{k}={v}" for k, v in sorted(a.items())) or "none" for a in asked)
        raise ApiError(403, f"{token.name} may {needed} {task_type} tasks only with the labels {wanted or 'of no namespace'}")


def may_submit(store: TaskStore, token: ApiToken, task_type: str, labels: Mapping[str, str],
               after_task: str | None) -> None:
    """A submission (or its dry run) by this token: its type and labels in a namespace where it
    may submit, and the task it waits for one it sees (else the answer for no such task)."""
    if token.scope is None:
        return
    may_create(token, task_type, labels)
    if after_task is not None:
        awaited = store.get(after_task) or store.get_by_idempotency_key(after_task)
        if awaited is not None and not sees(token, awaited):
            raise UnknownAwaitedTask(after_task)


@contextmanager
def repeats_in_scope(store: TaskStore, token: ApiToken) -> Iterator[None]:
    """An idempotency key another namespace's task holds: 409 still (the key is taken), but
    neither that task's id nor the fields that differ."""
    try:
        yield
    except IdempotencyConflict as exc:
        if token.scope is None or sees(token, store.get(exc.task_id)):
            raise
        raise ApiError(409, "this idempotency key was used for another request", code="idempotency_conflict") from None


def may_see_type(token: ApiToken, task_type: str) -> bool:
    return token.scope is None or may_hold_type(token.scope, task_type)


def check_task_types(tokens: tuple[ApiToken, ...], known: set[str]) -> None:
    """Start-up: a namespace naming a task type flows.yaml lacks would grant nothing in silence."""
    for number, token in enumerate(tokens, start=1):
        for index, namespace in enumerate(token.scope or ()):
            for name in sorted(namespace.task_types - known):
                raise ConfigError(f"BATON_API_TOKENS: entry {number} ({token.name}): namespaces[{index}].task_types: "
                                  f"{name!r} is not a task type flows.yaml defines")  # fmt: skip
