"""A `for_each` step's items, a page at a time: `GET /api/v1/tasks/{id}/steps/{step}/items`.

The task view shows a fan-out step's counts by state, never its items (a step may hold 10,000):
they come here, in item order, `limit` at a time, filtered by state, masked as the task view
masks them. Whether the step keeps its items inline or in records of their own, the answer is
the same (docs/design/item-records.md, "Views and limits").
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query

from common.engine.views import DEFAULT_PAGE, MAX_PAGE, STATES_PATTERN, ItemQueryError, parse_item_query, step_cursor
from common.step_index import STEP_PATH_SCHEMA
from oss.api.access import read_visible
from oss.api.scoped_views import view_shown
from oss.api.auth import Context, Reader
from oss.api.errors import ApiError
from oss.api.query import ASCII_INT
from oss.api.schemas import ItemPage, error_responses
from oss.services.item_views import item_page

router = APIRouter(prefix="/api/v1", tags=["tasks"])
STATES = "One state (e.g. failed) or several, comma-separated: only items in them"
_FIELDS = {"step": "path.step", "state": "query.state", "after": "query.after", "limit": "query.limit",
           "failed": "query.failed"}
FAILED = ("true: only items whose normal phase ended failed, whatever their state now (the item that failed "
          "still shows once rolled back); with state, those of them in one of its states now")


@router.get("/tasks/{task_id}/steps/{step}/items", response_model=ItemPage,
            summary="A for_each step's items, paged by item index",
            responses=error_responses(401, 404, 409, 422, 503))  # fmt: skip
def step_items(
    task_id: str,
    context: Context,
    token: Reader,
    step: Annotated[str, Path(max_length=128, json_schema_extra=STEP_PATH_SCHEMA,
                                description="The step's index (Steps[i]) or its name")],
    state: Annotated[str | None, Query(max_length=512, pattern=STATES_PATTERN, description=STATES)] = None,
    after: Annotated[int | None, Query(ge=0, le=10**9, description="NextAfter of the page before: items past it"),
                     ASCII_INT] = None,  # fmt: skip
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE), ASCII_INT] = DEFAULT_PAGE,
    failed: Annotated[Literal["true", "false"], Query(description=FAILED)] = "false",
) -> ItemPage:
    """Items in index order with their value, state, attempts, times, message and output
    (secrets masked). `NextAfter` asks for the next page. 404 for no such task or no such step,
    409 for a step that is not a for_each step (both name `path.step`), 422 naming the query
    parameter at fault, or `path.step` for an index not written as one ("00"). A for_each step not started yet has no items."""
    task = read_visible(context.store, token, task_id)  # 404 for a missing id, or one outside its namespaces
    try:
        query = parse_item_query(state, after, limit, failed == "true")
    except ItemQueryError as exc:  # the query's own form (the schema lets little through)
        raise ApiError(422, "the request is not valid", fields=[(_FIELDS[exc.field], str(exc))]) from None
    try:
        cursor = step_cursor(task, step)
    except ItemQueryError as exc:  # what the task has (404 or 409), or an index written "00" (422)
        status = 422 if exc.malformed else 404 if exc.missing else 409
        raise ApiError(status, str(exc), fields=[(_FIELDS[exc.field], str(exc))]) from None
    assert context.items is not None  # create_app always opens it
    return view_shown(context.store, token, ItemPage.model_validate(item_page(task, cursor, query, context.items)))
