"""A `for_each` step whose items come from a module's command a page at a time
(docs/design/item-sources.md): the task's side. Pure: each function changes the task in place,
inside the caller's one compare-and-set.

A page is a run of the step's own unit (the step, no item) on the source's module. Its outcome
fixes the page: the values go into an `open_items` entry with the index of its first item, and
the cursor advances, in the same write; a second outcome of the same page is fenced like any
stale outcome. Imported by a change only (the extension loads it when a source step changes).
"""

from __future__ import annotations

from typing import Any

from common.engine.core.units import AttemptResult, Timing, drop_outbox, record, remove_run
from common.engine.document import OutboxEntry, Run, Step, Task
from common.engine.kinds.for_each.item_views import RECORDS
from common.engine.kinds.for_each.records import OPEN_ITEMS, entry_id
from common.engine.kinds.for_each.extending import extensions
from common.engine.kinds.for_each.source.fields import SourcePaging
from common.engine.states import UNCLAIMED, Phase, TaskStatus
from common.input_limits import quoted

PAGE_AFTER, PAGE_SIZE = "page_after", "page_size"  # what a page's command is given besides the task's parameters
FETCH, BACKWARD = "fetch", "backward"  # what a page's end asks of the engine


def is_page(step: Step, run: Run) -> bool:
    """Whether `run` fetches a page of the step's source (the step's own unit, forward)."""
    return step.Source is not None and run.Item is None and run.Phase is Phase.NORMAL


def page_parameters(step: Step) -> dict[str, Any]:
    """What a page's command is given besides the task's parameters: the cursor and the page's size."""
    assert step.Source is not None
    paging = step.Paging or SourcePaging()
    return {PAGE_AFTER: paging.After, PAGE_SIZE: step.Source.PageSize}


def open_source(task: Task, cursor: int, timing: Timing, actor: str) -> None:
    """In place, from the change that opens the step: no item yet; its first page is fetched."""
    step = task.Steps[cursor]
    assert step.Source is not None
    step.ItemStore, step.ItemCount, step.ItemsOpen = RECORDS, 0, True
    step.Paging = SourcePaging()
    record(task, timing.now, "items_fixed", actor=actor, unit=(cursor, None),
           message=f"from source {step.Source.Module}.{step.Source.Command}, a page at a time")
    # Its first page is dispatched by the caller (the kind's `first_units`): the engine routes.


def read_page(output: dict[str, Any], size: int) -> tuple[list, Any, int | None] | str:
    """A page's command output as (items, next cursor, total), or what is wrong with it."""
    items, following, total = output.get("items"), output.get("next"), output.get("total")
    if not isinstance(items, list):
        return f"the source's page has no items list (its output: {sorted(output)[:10]})"
    if len(items) > size:
        return f"the source's page holds {len(items)} items, more than its page_size {size}"
    if following is not None and (isinstance(following, bool) or not isinstance(following, (str, int))):
        return f"the source's next cursor must be a string, an integer or null, not {type(following).__name__}"
    if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < 0):
        return f"the source's total must be a count (an integer >= 0), not {total!r}"
    return items, following, total


def conclude_page(task: Task, run: Run, result: AttemptResult, timing: Timing, actor: str) -> str | None:
    """In place: a page's run ended for good (its retries are spent, or it succeeded). Store the
    page, or fail the step; the task going backward stops the fetching. What the caller does next:
    FETCH (dispatch the next page), BACKWARD (send the task backward), or None."""
    cursor, step = run.Cursor, task.Steps[run.Cursor]
    paging = step.Paging or SourcePaging()
    step.Paging = paging
    step.TimeEnd = None  # a page ended, not the step
    if task.CancelRequested is not None and task.TaskStatus is not TaskStatus.ROLLING_BACK:
        return BACKWARD  # a cancel waited for this page's end: turning back stops the fetching
    if paging.Done or task.TaskStatus is TaskStatus.ROLLING_BACK:
        stop_fetching(task, cursor, timing.now, f"{paging.Page}:stopped")
        return None
    page = read_page(result.output, step.Source.PageSize) if result.ok and step.Source else result.message
    if not isinstance(page, str) and step.MaxItems is not None and paging.Fetched + len(page[0]) > step.MaxItems:
        page = f"the source has more than the step's max_items ({step.MaxItems}) items"  # a runaway source
    if not isinstance(page, str) and page[1] is not None and page[1] == paging.After:
        # Asked again with it, it would answer the same, for ever: a loop no count stops (its pages may be empty).
        page = f"the source's next cursor is the cursor it was asked with ({quoted(str(page[1]))}): it would page forever"
    if isinstance(page, str):
        paging.Done, paging.Failed = True, page or "the source failed"
        _count_known(task, cursor, timing.now, final=True)
        step.Message = task.TaskMessage = f"source of step {step.Name} failed: {paging.Failed}"
        record(task, timing.now, "source_failed", actor=actor, message=paging.Failed, unit=(cursor, None))
        return BACKWARD
    items, following, total = page
    body = {"Cursor": cursor, "Generation": task.Generation, "Values": items, "From": paging.Fetched,
            "Last": following is None}
    task.Outbox.append(OutboxEntry(DispatchId=f"{entry_id(task, cursor, OPEN_ITEMS)}:{paging.Page}", Kind=OPEN_ITEMS,
                                   Body=body, DueAt=timing.now))
    paging.Fetched += len(items)
    step.ItemCount = paging.Fetched
    paging.Page, paging.After, paging.Total = paging.Page + 1, following, total if total is not None else paging.Total
    record(task, timing.now, "page_fetched", actor=actor, unit=(cursor, None),
           message=f"page {paging.Page}: {len(items)} items, {paging.Fetched} in all")
    paging.Done = following is None
    _count_known(task, cursor, timing.now, final=False)
    return None if paging.Done else FETCH


def _count_known(task: Task, cursor: int, now: float, final: bool) -> None:
    """In place: the step's extensions hear that more of its items are known (its waves are
    sized from the count); `final`: no more come."""
    for extension in extensions():
        extension.count_known(task, cursor, now, final)


def stop_fetching(task: Task, cursor: int, now: float, suffix: str) -> None:
    """In place: the task went backward; no page is fetched any more. A page nobody claimed yet
    is withdrawn; an entry asks the relay whether the step's items settled (nothing else may:
    its items may all have ended while the page was on its way)."""
    step = task.Steps[cursor]
    if step.Paging is None or not step.ItemsOpen:
        return  # not a source step, or its items settled already
    for run in [r for r in task.Runs if r.Cursor == cursor and is_page(step, r) and r.State in UNCLAIMED]:
        remove_run(task, run)
        drop_outbox(task, run.DispatchId)
        record(task, now, "cancelled", run, actor="baton", message="the task went backward: no page is fetched")
    step.Paging.Done = True
    _count_known(task, cursor, now, final=True)  # every wave fixed from what was fetched: nothing more comes
    body = {"Cursor": cursor, "Generation": task.Generation, "Values": [], "From": step.Paging.Fetched, "Last": True}
    task.Outbox.append(OutboxEntry(DispatchId=f"{entry_id(task, cursor, OPEN_ITEMS)}:{suffix}", Kind=OPEN_ITEMS,
                                   Body=body, DueAt=now))


def paging_left(task: Task, cursor: int) -> bool:
    """Whether the step still fetches pages: it cannot settle forward before the last one."""
    paging = task.Steps[cursor].Paging
    return paging is not None and not paging.Done
