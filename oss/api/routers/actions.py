"""Operator actions on a task: cancel, retry, retry-rollback, compensate, pause, resume, redrive,
rollback, skip.
Each needs the operator role and a reason; both go into the task's history."""

from __future__ import annotations

from collections.abc import Callable

from typing import Annotated

from fastapi import APIRouter, Path

from common.step_index import STEP_PATH_SCHEMA, BadStepIndex, NoSuchUnit, step_index
from common.engine.views import with_full_history
from oss.services.actions import ACTIONS, SKIP
from oss.api.access import read_visible, role_of
from oss.api.scoped_views import view_shown
from oss.api.auth import Context, Operator, Submitter
from oss.api.errors import ApiError
from oss.api.schemas import CancelAction, OperatorAction, SkipAction, StepActionBody, TaskDetail, error_responses
from oss.settings import ROLES
from oss.api.views import task_view

router = APIRouter(prefix="/api/v1", tags=["operator actions"])

_SUMMARIES = {
    "cancel": (
        "Cancel a task",
        (
            "Running steps finish (or, with stop_running, are stopped now), then every step that ran is "
            "rolled back in reverse order of the flow; a step only dispatched is fenced at once; a task "
            "not started yet ends now."
        ),
    ),
    "retry": (
        "Retry a failed task",
        "A ROLLED_BACK task runs its flow again from step 0, with the parameters it was submitted with, as a new generation (its rollback undid every step).",
    ),
    "retry-rollback": (
        "Retry the failed rollback step",
        "A ROLLBACK_FAILED task dispatches the rollback step that failed again.",
    ),
    "compensate": (
        "Mark the failed rollback step compensated",
        (
            "The operator undid the step by hand (say how in the reason); the rollback continues "
            "with the earlier steps."
        ),
    ),
    "pause": (
        "Pause a task",
        "No new step starts while it is paused: claimed steps finish, a step only dispatched is "
        "withdrawn. A task that rolls back (a failure, a cancel, its deadline) is no longer paused.",
    ),
    "resume": ("Resume a paused task", "Clears the pause and dispatches every step that became ready."),
    "redrive": (
        "Redrive a held task",
        "A task held by a failure (on_failure: hold) goes on from where it stopped: its failed items run again as "
        "a new attempt under the same idempotency keys, then the items never started; what succeeded never runs "
        "again. If one fails again, the task holds again.",
    ),
    "rollback": (
        "Roll back a held task",
        "A task held by a failure (on_failure: hold) goes backward as the failure would have sent it without the "
        "hold: every applied unit is rolled back.",
    ),
}


def _route(action: str) -> Callable[..., TaskDetail]:
    # Only cancel's body may say stop_running: true; the others' schema says false, as they check.
    Body = CancelAction if action == "cancel" else OperatorAction  # noqa: N806

    def act(task_id: str, body: Body, context: Context, token: Operator) -> TaskDetail:  # type: ignore[valid-type]
        in_scope(context, token, task_id)
        task = context.service.actions.apply(action, task_id, token.name, body.reason, stop_running=body.stop_running)
        shown = task_view(with_full_history(context.store, task), context.clock(), items=context.items)
        return view_shown(context.store, token, shown)

    act.__annotations__["body"] = Body  # the module's annotations are strings: resolve this one here
    act.__name__ = action.replace("-", "_") + "_task"
    act.__doc__ = _SUMMARIES[action][1]
    return act


def in_scope(context: Context, token: Operator, task_id: str) -> None:
    """A scoped token acts only on a task of a namespace where it is an operator: 404 outside
    them, as for a missing id (the action answers that itself for an unscoped token)."""
    if token.scope is not None:
        read_visible(context.store, token, task_id, "operator")


for _action in ACTIONS:
    router.add_api_route(
        f"/tasks/{{task_id}}/{_action}",
        _route(_action),
        methods=["POST"],
        response_model=TaskDetail,
        summary=_SUMMARIES[_action][0],
        responses=error_responses(401, 403, 404, 409, 413, 422, 503),
    )


@router.post(f"/tasks/{{task_id}}/{SKIP}", response_model=TaskDetail, summary="Skip a failed step",
             responses=error_responses(401, 403, 404, 409, 413, 422, 503))  # fmt: skip
def skip_task(task_id: str, body: SkipAction, context: Context, token: Operator) -> TaskDetail:
    """The step (or item) is marked operator_skipped and the flow goes on as if it succeeded.
    A RUNNING task: a step that keeps failing (its retry pending or running) is stopped and
    passed. A ROLLED_BACK task: it runs again as a new generation with the step that failed
    skipped (the whole step). A step or item index the task does not have (or no item named of
    a for_each step): 422 naming it. Anything else: 409."""
    in_scope(context, token, task_id)
    try:
        task = context.service.actions.apply(SKIP, task_id, token.name, body.reason, unit=(body.step, body.item))
    except NoSuchUnit as exc:  # a value out of the task's range: the request's, as any bad value
        raise ApiError(422, "the request is not valid", fields=[(exc.field, str(exc))]) from None
    except ValueError as exc:  # what the task's state refuses (an item of a rolled-back task): 409
        raise ApiError(409, f"skip refused: {exc}", fields=[("item" if "item" in str(exc) else "step",
                                                            str(exc))]) from None  # fmt: skip
    return view_shown(context.store, token, task_view(with_full_history(context.store, task), context.clock(),
                                                     items=context.items))


@router.post("/tasks/{task_id}/steps/{step}/actions/{action}", response_model=TaskDetail,
             summary="Take a step's action (approve, reject)",
             responses=error_responses(401, 403, 404, 409, 413, 422, 503))  # fmt: skip
def step_action(task_id: str, step: Annotated[str, Path(json_schema_extra=STEP_PATH_SCHEMA)], action: str,
                body: StepActionBody, context: Context, token: Submitter) -> TaskDetail:
    """An action the step's kind offers while the step waits for people (the task view's
    `Steps[].Shown.Actions`): an approval step's `approve` and `reject`. `step` is its name or
    index. A read token changes nothing (403); the step's kind judges who else may (403: a role
    it does not name, the submitter where it says not) and when (409: it waits for nothing now,
    this person acted already). 404 names a step the task does not have, or an action its kind
    does not offer; 422 an index not written as one ("00"); a scoped token acts only in its namespaces where it may submit (404 outside)."""
    try:
        step_index(step)
    except BadStepIndex as exc:  # the request's form, whatever the task has
        raise ApiError(422, "the request is not valid", fields=[("path.step", str(exc))]) from None
    role = token.role
    if token.scope is not None:  # its role is the namespace's the task is in
        found = read_visible(context.store, token, task_id, "submit")
        role = role_of(token, found.TaskType, found.Labels) or "read"
    roles = frozenset(ROLES[:ROLES.index(role) + 1])  # a role may do what those below it may
    task = context.service.actions.act_on_step(task_id, step, action, token.name, roles, body.reason)
    return view_shown(context.store, token, task_view(with_full_history(context.store, task), context.clock(),
                                                     items=context.items))
