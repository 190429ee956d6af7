"""Operator actions on a task: cancel, retry, retry-rollback, compensate, pause, resume, skip.
Each needs the operator role and a reason; both go into the task's history."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter

from common.engine.history import with_full_history
from oss.actions import ACTIONS, SKIP
from oss.api.auth import Context, Operator
from oss.api.errors import ApiError
from oss.api.schemas import CancelAction, OperatorAction, SkipAction, TaskDetail, error_responses
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
}


def _route(action: str) -> Callable[..., TaskDetail]:
    # Only cancel's body may say stop_running: true; the others' schema says false, as they check.
    Body = CancelAction if action == "cancel" else OperatorAction  # noqa: N806

    def act(task_id: str, body: Body, context: Context, token: Operator) -> TaskDetail:  # type: ignore[valid-type]
        task = context.service.actions.apply(action, task_id, token.name, body.reason, stop_running=body.stop_running)
        return task_view(with_full_history(context.store, task), context.clock(), items=context.items)

    act.__annotations__["body"] = Body  # the module's annotations are strings: resolve this one here
    act.__name__ = action.replace("-", "_") + "_task"
    act.__doc__ = _SUMMARIES[action][1]
    return act


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
    skipped (the whole step). Anything else, or a unit the task does not have: 409."""
    try:
        task = context.service.actions.apply(SKIP, task_id, token.name, body.reason, unit=(body.step, body.item))
    except ValueError as exc:  # the task has no such unit: its document, not the body's form (409)
        raise ApiError(409, f"skip refused: {exc}", fields=[("item" if "item" in str(exc) else "step",
                                                            str(exc))]) from None  # fmt: skip
    return task_view(with_full_history(context.store, task), context.clock(), items=context.items)
