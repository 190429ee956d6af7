"""The idempotency rule: a repeated key is the same request, or a conflict that says what differs.

A key names one request. Submitting it again with the same task type, parameters (after the task
type's defaults are filled in), priority, user id, labels, start_at and after_task (the task it
names, by id or key) answers the original task (200): every field of the request counts.
Anything else under the same key is a client bug (two requests sharing an id): 409 naming the
fields that differ, never their values (a parameter may be a secret). A client retrying a
delayed start sends the time it computed the first time, not a new one.

Keys are not scoped per task type: a key is the client's id for one request, and the same id on
another task type is far likelier a mistake than an intent; a 409 says so instead of creating a
second task the client did not mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.engine.document import Task


def differences(
    existing: Task,
    task_type: str,
    parameters: Mapping[str, Any],
    priority: int,
    user_id: str | None,
    labels: Mapping[str, str],
    start_at: float | None,
    after_task_id: str | None,
) -> list[str]:
    """The names of the request fields that differ from the task the key created (empty: same)."""
    found = []
    if existing.TaskType != task_type:
        found.append("task_type")
    old = existing.SubmittedParameters
    found += [f"parameters.{name}" for name in sorted(set(old) | set(parameters))
              if name not in old or name not in parameters or not _same(old[name], parameters[name])]  # fmt: skip
    if existing.Priority != priority:
        found.append("priority")
    if existing.UserId != user_id:
        found.append("user_id")
    if existing.Labels != dict(labels):
        found.append("labels")
    if existing.StartAt != start_at:
        found.append("start_at")
    if existing.AfterTask != after_task_id:
        found.append("after_task")
    return found


def _same(a: Any, b: Any) -> bool:
    # JSON equality: 1 and 1.0 are the same number, but true is not 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b
