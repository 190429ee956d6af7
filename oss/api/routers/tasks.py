"""Create, list and read tasks."""

from __future__ import annotations

from dataclasses import replace

from collections import Counter

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from pydantic import StringConstraints

from common.labels import LABEL_KEY
from common.engine.views import with_full_history
from common.input_limits import NO_CONTROL_PATTERN
from common.secrets.task_views import masked_task
from common.engine.states import TaskStatus, parse_task_status
from common.store.side.modules import live_modules
from common.store.tasks.filters import (
    CURSOR_PATTERN, TaskFilter, decode_cursor, encode_cursor, page_key, search_matches,
)
from common.store.tasks.paging import iterate_tasks
from oss.api.access import may_submit, read_visible, repeats_in_scope, scope_for
from oss.api.scoped_views import view_shown
from oss.api.auth import Context, Reader, Submitter
from oss.api.query import ASCII_INT
from oss.api.context import ApiContext
from oss.api.errors import ApiError
from oss.api.schemas import MAX_LABELS, CreateTask, Moment, StatusFilter, TaskCreated, TaskDetail, TaskPage, error_responses
from oss.api.routers.modules import Modules
from oss.api.created_view import created_answer
from oss.api.dry_run_answer import plan_answer
from oss.api.lean.task_routes import ReadRoute, SubmitRoute
from oss.services.plans import Plan
from oss.api.views import task_summary, task_view
from oss.services.item_views import item_runs

router = APIRouter(prefix="/api/v1", tags=["tasks"])
Label = Annotated[str, StringConstraints(pattern=rf"^{LABEL_KEY}=[^\x00-\x1f\x7f-\x9f]{{0,256}}$")]  # no control character


SEARCH = "A task id or its start, or text in the task type, message or a label (key=value); any case"


def create_task(body: CreateTask, context: Context, token: Submitter, request: Request) -> Response:
    """Validate the parameters against the task type's schema, then write the whole task and
    dispatch its first step (at `start_at` when given). 201 with a Location header; 200 with
    the existing task when the idempotency key was used before for the same request, even by a
    concurrent one; 409 naming the fields that differ when it was used for another request.
    In a freeze window of the type (flows.yaml `freeze:`): policy wait, the task is created and
    waits for the window's end (`WaitingFor` kind freeze); policy refuse, 409 `frozen` naming the
    window and its end, and nothing is created. With `dry_run`: the same checks and answers to a refused request, then 200 with the plan,
    and nothing created, published or asked for."""
    options = {
        "idempotency_key": body.idempotency_key,
        "priority": body.priority,
        "start_at": body.start_at,  # (the validator made it epoch seconds)
        "user_id": body.user_id,
        "labels": body.labels,
        "after_task": body.after_task,
        "submitted_by": token.name,  # who an approval step may refuse as approver (not_submitter)
    }
    may_submit(context.store, token, body.task_type, body.labels or {}, body.after_task)
    if body.dry_run:
        return plan_answer(request, context, token, body, options)
    with repeats_in_scope(context.store, token):
        submission = context.service.submit(body.task_type, body.parameters, **options)
    task = submission.task
    location = f"/api/v1/tasks/{task.TaskId}"
    if submission.created:
        context.metrics.tasks_created.labels(task.TaskType).inc()
    # Serialised here, once: returned as a model, FastAPI would validate it against the response
    # model a second time (a tenth of a submission's CPU). The model still documents the answer.
    answer = created_answer(task, context.clock(), submission.created, location)
    return Response(answer, status_code=201 if submission.created else 200,
                    headers={"Location": location} if submission.created else None,
                    media_type="application/json")  # fmt: skip


# A SubmitRoute: a submission FastAPI would accept skips its dependency solving (oss/api/lean/).
router.add_api_route(
    "/tasks",
    create_task,
    methods=["POST"],
    route_class_override=SubmitRoute,
    status_code=201,
    response_model=TaskCreated,
    summary="Create a task (or plan it: dry_run)",
    responses={
        200: {
            "model": TaskCreated | Plan,
            "description": "The task an earlier request with this idempotency key created; "
            "with `dry_run`, the plan of what the task would do",
        },
        **error_responses(401, 403, 404, 409, 413, 422, 503),
    },
)


@router.get("/tasks", response_model=TaskPage, summary="List tasks, newest first",
            responses=error_responses(401, 422, 503))  # fmt: skip
def list_tasks(
    context: Context,
    token: Reader,
    task_type: Annotated[str | None, Query(max_length=128, pattern=NO_CONTROL_PATTERN)] = None,
    status: Annotated[StatusFilter | None, Query(description="A code 0-5 or its name, e.g. ROLLED_BACK")] = None,
    user_id: Annotated[str | None, Query(max_length=256, pattern=NO_CONTROL_PATTERN, description="Owner")] = None,
    # A task holds at most MAX_LABELS labels, so more filters can match nothing; unbounded, they
    # made one SQL statement past SQLite's limits (a 503 for a bad request).
    label: Annotated[list[Label] | None, Query(max_length=MAX_LABELS, description="key=value; repeat: all must match")] = None,
    created_from: Annotated[Moment | None, Query(description="ISO-8601 or epoch; inclusive")] = None,
    created_to: Annotated[Moment | None, Query(description="ISO-8601 or epoch; exclusive")] = None,
    q: Annotated[str | None, Query(max_length=256, pattern=NO_CONTROL_PATTERN, description=SEARCH)] = None,
    failed_items: Annotated[bool, Query(description="Only tasks that ended with items failed within a for_each "
                                        "step's failure budget")] = False,
    cursor: Annotated[str | None, Query(pattern=CURSOR_PATTERN, description="next_cursor of the page before")] = None,
    limit: Annotated[int, Query(ge=1, le=500), ASCII_INT] = 50,
) -> TaskPage:
    search = q.strip() if q and q.strip() else None
    wanted = TaskFilter(
        status=_status(status.value) if status else None,
        task_type=task_type,
        user_id=user_id,
        labels=dict(item.split("=", 1) for item in label or []),
        created_from=created_from,
        created_to=created_to,
        search=search,
        scope=scope_for(token),  # a scoped token's namespaces: in the store's query, so counts hold to them
        failed_items=failed_items,
    )
    # one more than asked tells whether another page exists
    tasks = context.store.list_tasks(replace(wanted, after=_after(cursor)), limit=limit + 1)
    page = tasks[:limit]
    more = len(tasks) > limit
    now = context.clock()
    # A step whose items run over records: a drain holding them is read from them (one small page).
    shown = [task_summary(t, now, item_runs(t, context.items)) for t in page]
    if search:  # a task matched only through a masked secret is not shown (see search_matches)
        shown = [s for s, t in zip(shown, page) if search_matches(masked_task(t), search)]
    every_status = replace(wanted, status=None)
    counts = _searched_counts(context, every_status, search) if search else context.store.count_tasks(every_status)
    chosen = wanted.status
    return view_shown(context.store, token, TaskPage(  # the other tasks they name, only those in scope
        items=shown,
        next_cursor=encode_cursor(page_key(page[-1])) if more else None,
        total=sum(counts.values()) if chosen is None else counts.get(chosen, 0),
        counts={status.name: counts.get(status, 0) for status in TaskStatus},
    ))


SEARCH_COUNT_LIMIT = 20_000


def _searched_counts(context: ApiContext, wanted: TaskFilter, search: str) -> dict[TaskStatus, int]:
    """Counts per status of what a search shows. The store's own count would include tasks
    that matched only through a masked secret (a failure message quoting a password): a reader
    could then probe a secret's text through the counts. A search scans every task anyway; this
    masks and checks only the matches, up to SEARCH_COUNT_LIMIT of them."""
    matches = iterate_tasks(context.store, SEARCH_COUNT_LIMIT, wanted)
    counts = Counter(t.TaskStatus for t in matches if search_matches(masked_task(t), search))
    return dict(counts)


def get_task(task_id: str, context: Context, token: Reader, registry: Modules) -> Response:
    """Every field of the task document, steps with times, attempts and errors, and the event
    history; secret parameters masked. Added: every attempt (the document keeps each phase's
    last), for a delayed start not reached yet when it starts, and `Waiting` when no live
    module serves the queue its step waits in. 409 when the stored document cannot be read (an
    alarm names it)."""
    task = read_visible(context.store, token, task_id)  # 404 for a missing id, or one outside its namespaces
    now = context.clock()
    task = with_full_history(context.store, task)
    shown = task_view(task, now, live_modules(registry.registrations(), now, context.settings.module_ttl),
                      items=context.items)
    shown = view_shown(context.store, token, shown)  # other tasks it names, only those in the token's scope
    # Serialised here, once, as FastAPI would against the response model (by alias): returned as a
    # model, it would be validated again, on another hand-over to the thread pool.
    return Response(shown.model_dump_json(by_alias=True), media_type="application/json")


# A ReadRoute: a read with a valid token skips FastAPI's dependency solving (oss/api/lean/).
router.add_api_route("/tasks/{task_id}", get_task, methods=["GET"], route_class_override=ReadRoute,
                     response_model=TaskDetail, summary="One task: the whole document",
                     responses=error_responses(401, 404, 409, 422, 503))  # fmt: skip


def _status(text: str) -> TaskStatus:
    return parse_task_status(text)  # the enum let only codes and names through


def _after(cursor: str | None) -> tuple[float, str] | None:
    try:
        return None if cursor is None else decode_cursor(cursor)
    except ValueError as exc:  # the pattern let it through: decode_cursor and it disagree
        raise ApiError(422, "the request is not valid", fields=[("query.cursor", str(exc))]) from None
