"""Tasks: submit, plan (a dry run), read, list, a for_each step's items, and the operator actions.

Each function below is a call's whole definition (baton_client/call.py): it takes the caller's
arguments and returns the request it makes, without `self`; both clients send it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from baton_client.call import Call, endpoint, segment
from baton_client.models.listing import ItemPage, TaskCreated, TaskPage
from baton_client.models.plan import Plan
from baton_client.models.operations import CallbackAccepted
from baton_client.models.requests import (
    CallbackBody, CancelAction, CreateTask, Moment, OperatorAction, SkipAction, StepActionBody,
)
from baton_client.models.task import TaskDetail, TaskStatus

TASKS = "/api/v1/tasks"
CREATED_OR_FOUND = frozenset({200, 201})


def status_filter(status: TaskStatus | int | str | None) -> str | None:
    """A status as the API's filters take it: its code ("4") or its name ("rolled_back")."""
    if status is None or isinstance(status, str):
        return status
    return str(int(status))


def _creation(task_type: str, parameters: Mapping[str, Any] | None, dry_run: bool, **fields: Any) -> CreateTask:
    labels = fields.pop("labels") or {}
    return CreateTask(task_type=task_type, parameters=dict(parameters or {}), labels=dict(labels), dry_run=dry_run,
                      **fields)  # fmt: skip


def _action(task_id: str, action: str, reason: str) -> Call[TaskDetail]:
    return Call("POST", f"{TASKS}/{segment(task_id)}/{action}", TaskDetail,
                body=OperatorAction(reason=reason))  # fmt: skip


class TaskCalls:
    @endpoint
    def submit(
        task_type: str, parameters: Mapping[str, Any] | None = None, *, idempotency_key: str | None = None,
        priority: int = 0, start_at: Moment | None = None, user_id: str | None = None,
        labels: Mapping[str, str] | None = None, after_task: str | None = None,
    ) -> Call[TaskCreated]:  # fmt: skip
        """Create a task. `idempotency_key` (a business id) makes the call safe to repeat: the
        same request again answers the task it created (`created` False), so a 503 or a lost
        answer is retried; the same key with another request raises Conflict naming the fields
        that differ. `start_at`: a delayed start (epoch seconds or a datetime; naive is UTC);
        `after_task`: start once that task (its id or key) succeeded; `priority` 0 to 4."""
        body = _creation(task_type, parameters, False, idempotency_key=idempotency_key, priority=priority,
                         start_at=start_at, user_id=user_id, labels=labels, after_task=after_task)  # fmt: skip
        # 201: created; 200: the key's task, created before.
        return Call("POST", TASKS, TaskCreated, body=body, safe=idempotency_key is not None, ok=CREATED_OR_FOUND)

    @endpoint
    def plan(
        task_type: str, parameters: Mapping[str, Any] | None = None, *, idempotency_key: str | None = None,
        priority: int = 0, start_at: Moment | None = None, user_id: str | None = None,
        labels: Mapping[str, str] | None = None, after_task: str | None = None,
    ) -> Call[Plan]:  # fmt: skip
        """A dry run of submit: the same checks and refusals, then what the task would do (its
        steps, the locks it would wait for, the modules that would serve it, when it would
        start). Nothing is created."""
        body = _creation(task_type, parameters, True, idempotency_key=idempotency_key, priority=priority,
                         start_at=start_at, user_id=user_id, labels=labels, after_task=after_task)  # fmt: skip
        return Call("POST", TASKS, Plan, body=body, safe=True)

    @endpoint
    def get_task(task_id: str) -> Call[TaskDetail]:
        """The whole task (secrets masked): steps, every attempt, the history. NotFound if none."""
        return Call("GET", f"{TASKS}/{segment(task_id)}", TaskDetail, safe=True)

    @endpoint
    def list_tasks(
        *, task_type: str | None = None, status: TaskStatus | int | str | None = None, user_id: str | None = None,
        labels: Mapping[str, str] | None = None, created_from: Moment | None = None,
        created_to: Moment | None = None, search: str | None = None, failed_items: bool = False,
        cursor: str | None = None, limit: int = 50,
    ) -> Call[TaskPage]:  # fmt: skip
        """One page of tasks, newest first. Every filter given must match (`labels`: each
        key=value); `search`: a task id or its start, or text in the type, message or a label.
        `failed_items`: only tasks that ended with items failed within a for_each step's budget.
        The page's `next_cursor`, given as `cursor`, asks for the next page (iter_tasks does)."""
        params = {
            "task_type": task_type, "status": status_filter(status), "user_id": user_id,
            "label": [f"{key}={value}" for key, value in (labels or {}).items()], "created_from": created_from,
            "created_to": created_to, "q": search, "failed_items": failed_items, "cursor": cursor, "limit": limit,
        }  # fmt: skip
        return Call("GET", TASKS, TaskPage, params=params, safe=True)

    @endpoint
    def list_items(
        task_id: str, step: int | str, *, state: str | Sequence[str] | None = None, after: int | None = None,
        limit: int | None = None, failed: bool = False,
    ) -> Call[ItemPage]:  # fmt: skip
        """One page of a for_each step's items (`step`: its index or name), in item order;
        `state` keeps those in that state (or states); `failed` those whose normal phase ended
        failed, whatever their state now (not with `state`). `NextAfter`, given as `after`, asks
        for the next page (iter_items does)."""
        states = state if state is None or isinstance(state, str) else ",".join(state)
        return Call("GET", f"{TASKS}/{segment(task_id)}/steps/{segment(step)}/items", ItemPage,
                    params={"state": states, "after": after, "limit": limit, "failed": "true" if failed else None},
                    safe=True)  # fmt: skip

    @endpoint
    def cancel(task_id: str, reason: str, *, stop_running: bool = False) -> Call[TaskDetail]:
        """Start no new step, let running ones finish (or stop them now: `stop_running`), then
        roll back what ran. Conflict if the task has ended."""
        return Call("POST", f"{TASKS}/{segment(task_id)}/cancel", TaskDetail,
                    body=CancelAction(reason=reason, stop_running=stop_running))  # fmt: skip

    @endpoint
    def retry(task_id: str, reason: str) -> Call[TaskDetail]:
        """Run a ROLLED_BACK task again from its first step, as a new generation."""
        return _action(task_id, "retry", reason)

    @endpoint
    def retry_rollback(task_id: str, reason: str) -> Call[TaskDetail]:
        """Run the rollback step that failed (ROLLBACK_FAILED) again."""
        return _action(task_id, "retry-rollback", reason)

    @endpoint
    def compensate(task_id: str, reason: str) -> Call[TaskDetail]:
        """Mark the failed rollback step undone by hand (say how in `reason`); the rollback goes on."""
        return _action(task_id, "compensate", reason)

    @endpoint
    def pause(task_id: str, reason: str) -> Call[TaskDetail]:
        """Start no new step until resumed; running steps finish."""
        return _action(task_id, "pause", reason)

    @endpoint
    def resume(task_id: str, reason: str) -> Call[TaskDetail]:
        """Let a paused task go on."""
        return _action(task_id, "resume", reason)

    @endpoint
    def redrive(task_id: str, reason: str) -> Call[TaskDetail]:
        """Let a task held by a failure go on: its failed items run again, then those never
        started; what succeeded never runs again."""
        return _action(task_id, "redrive", reason)

    @endpoint
    def rollback(task_id: str, reason: str) -> Call[TaskDetail]:
        """Roll back a task held by a failure: every applied unit is rolled back."""
        return _action(task_id, "rollback", reason)

    @endpoint
    def skip(task_id: str, reason: str, *, step: int, item: int | None = None) -> Call[TaskDetail]:
        """Pass a failed step (or one item of a for_each step) as done: a running task goes on,
        a ROLLED_BACK one runs again without it."""
        return Call("POST", f"{TASKS}/{segment(task_id)}/skip", TaskDetail,
                    body=SkipAction(reason=reason, step=step, item=item))  # fmt: skip

    @endpoint
    def act(task_id: str, step: str, action: str, reason: str) -> Call[TaskDetail]:
        """Take an action a step offers while it waits for people (an approval step's
        "approve" or "reject"; the task view's `Steps[].Shown.Actions`). `step`: its name or index."""
        return Call("POST", f"{TASKS}/{segment(task_id)}/steps/{segment(step)}/actions/{segment(action)}", TaskDetail,
                    body=StepActionBody(reason=reason))  # fmt: skip

    @endpoint
    def callback(token: str, action: Literal["succeed", "fail", "heartbeat"], *, output: Mapping[str, Any] | None = None,
                 message: str = "", retryable: bool = True) -> Call[CallbackAccepted]:  # fmt: skip
        """Call back a step whose command gave `token` out and waits for it (no API token
        needed: the token is the credential). "succeed" merges `output` into the task's
        parameters; "fail" fails the step (`retryable`: whether its retries apply); "heartbeat"
        says the work goes on. NotFound: no such token; Conflict: answered already; Gone: its
        wait is over. A heartbeat is sent again after a lost answer; an answer is not (a repeat
        would be refused 409: read the task instead)."""
        body = CallbackBody(action=action, output=dict(output or {}), message=message, retryable=retryable)
        return Call("POST", f"/api/v1/callbacks/{segment(token)}", CallbackAccepted, body=body,
                    safe=action == "heartbeat")  # fmt: skip

