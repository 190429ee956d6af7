"""What a reader is shown of a `for_each` step's items, whichever way the step keeps them: inline
in `Steps[i].Items`, or in records of their own (docs/design/item-records.md, "Views and limits").
Pure: the records' counts and pages are read by the caller and handed in.

A view never carries a step's items in the task: it carries their counts by state; the items
come on request, a page at a time, in item order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from common.engine.codes import OutboxKind
from common.engine.document import Step, StepItem, Task
from common.engine.states import ResultCode, StepState
from common.step_index import BadStepIndex, step_index

# A step's ItemStore when its items live in records of their own (common.engine.kinds.for_each.records):
# here, with the views that branch on it, so a reader (`baton get`) does not load the engine.
RECORDS = "records"

# A `state` filter as a request may write it: state names, comma-separated (spaces allowed).
_NAME = "(?:" + "|".join(s.value for s in StepState) + ")"
STATES_PATTERN = rf"^ *{_NAME} *(?:, *{_NAME} *)*$"
MAX_PAGE = 500  # items in one page: an answer stays small however large the step
DEFAULT_PAGE = 100
# What an item shows: its unit state, value, output and child, never its run, outbox or events.
ITEM_FIELDS = frozenset(StepItem.model_fields)


def keeps_records(step: Step) -> bool:
    return step.ItemStore == RECORDS


class ItemQueryError(ValueError):
    """A page asked for that cannot be: `field` names the part of the request at fault."""

    def __init__(self, field: str, message: str, missing: bool = False, malformed: bool = False):
        super().__init__(message)
        self.field = field
        self.missing = missing  # the task has no such step (not a malformed request)
        self.malformed = malformed  # the request's form (a step index written "00"), whatever the task


@dataclass(frozen=True)
class ItemQuery:
    states: list[StepState] | None  # None: any state
    after: int | None  # items with a higher index; None: from the first
    limit: int
    failed: bool = False  # only items whose normal phase ended failed, whatever their state now


def failed_unit(unit: StepItem | Any) -> bool:
    """Whether an item's normal phase ended failed (its `Code` set and not OK): the item that
    failed still reads so once rolled back."""
    return unit.Code is not None and unit.Code != ResultCode.OK


def is_fan_out(step: Step) -> bool:
    """Whether the step has items to show: a `for_each` step that started (inline or records)."""
    return step.Items is not None or keeps_records(step)


def counts_view(counts: Mapping[StepState, int]) -> dict[str, int]:
    """Counts by state as shown: by state name, alphabetically, states with none left out."""
    return {state.value: counts[state] for state in sorted(counts, key=lambda s: s.value) if counts[state]}


# A step passed over backward as a whole (it declares no rollback) shows its items that ran as
# `skipped`, as an inline step's items are each set (common.engine.core.advance): a reader tells an
# item undone from one passed over. Their records keep the state they ended in.
_PASSED_OVER = frozenset({StepState.SUCCEEDED, StepState.FAILED})


def records_counts(step: Step, counts: Mapping[StepState, int]) -> dict[StepState, int]:
    """A step over records: its records' counts by state as shown. Items passed over read
    `skipped`; items whose records are not inserted yet (the step has just opened) read `waiting`,
    so the counts always add up to `ItemCount`."""
    shown = dict(counts)
    if step.State is StepState.SKIPPED:
        passed = sum(shown.pop(state, 0) for state in _PASSED_OVER)
        if passed:
            shown[StepState.SKIPPED] = shown.get(StepState.SKIPPED, 0) + passed
    missing = (step.ItemCount or 0) - sum(shown.values())
    if missing > 0:
        shown[StepState.WAITING] = shown.get(StepState.WAITING, 0) + missing
    return shown


def stored_states(step: Step, states: list[StepState] | None) -> list[StepState] | None:
    """The record states a page asking for `states` reads (a step passed over shows its items
    that ran as `skipped`: asking for `skipped` reads them, asking for `succeeded` finds none)."""
    if states is None or step.State is not StepState.SKIPPED:
        return states
    stored = {state for state in states if state not in _PASSED_OVER}
    if StepState.SKIPPED in stored:
        stored |= _PASSED_OVER
    return sorted(stored, key=lambda s: s.value)


def shown_state(step: Step, state: StepState) -> StepState:
    """An item's state as shown (see records_counts)."""
    return StepState.SKIPPED if step.State is StepState.SKIPPED and state in _PASSED_OVER else state


def inline_counts(step: Step) -> dict[StepState, int]:
    return dict(Counter(item.State for item in step.Items or ()))


def item_doc(index: int, unit: StepItem | Any, step: Step | None = None) -> dict[str, Any]:
    """One item as shown (before masking): its index first, then its unit state, value, output.
    `step`: the step over records it is a record of (its state as shown: shown_state)."""
    doc = {"Item": index, **unit.model_dump(mode="json", include=ITEM_FIELDS)}
    if step is not None:
        doc["State"] = shown_state(step, unit.State).value
    return doc


def parse_item_query(state: str | None, after: int | None, limit: int | None, failed: bool = False) -> ItemQuery:
    """The page a request asks for. `state`: one state name or several, comma-separated;
    `failed`: only the items whose normal phase ended failed (with `state`: those of them in
    one of these states now, rolled back, say)."""
    states = None
    if state is not None and state.strip():
        states = []
        for name in (part.strip() for part in state.split(",")):
            try:
                states.append(StepState(name))
            except ValueError:
                known = ", ".join(s.value for s in StepState)
                raise ItemQueryError("state", f"{name!r} is not a state; one of {known}") from None
    if after is not None and after < -1:
        raise ItemQueryError("after", f"{after}: an item index (0 or more), or -1 for the first page")
    if limit is None:
        limit = DEFAULT_PAGE
    if not 1 <= limit <= MAX_PAGE:
        raise ItemQueryError("limit", f"{limit}: from 1 to {MAX_PAGE}")
    return ItemQuery(sorted(set(states), key=lambda s: s.value) if states is not None else None,
                     None if after is None or after < 0 else after, limit, failed)


def step_cursor(task: Task, step: str) -> int:
    """The index of a step named by its index or its name; ItemQueryError("step") when the task
    has none, or it is not a fan-out step that started."""
    names = [s.Name for s in task.Steps]
    try:
        cursor = step_index(step)
    except BadStepIndex as exc:
        raise ItemQueryError("step", str(exc), malformed=True) from None
    if cursor is not None:
        if cursor >= len(task.Steps):
            raise ItemQueryError("step", f"step {cursor}: the task has steps 0 to {len(task.Steps) - 1}", missing=True)
    elif step in names:
        cursor = names.index(step)
    else:
        raise ItemQueryError("step", "the task has no step of that name or index", missing=True)
    found = task.Steps[cursor]
    if found.ForEach is None and found.Source is None:
        raise ItemQueryError("step", f"step {cursor} ({found.Name}) is not a for_each step: it has no items")
    return cursor


def inline_page(step: Step, query: ItemQuery) -> list[dict[str, Any]]:
    """Up to `query.limit` + 1 items of an inline step (one more tells whether a page follows)."""
    first = 0 if query.after is None else query.after + 1
    wanted = None if query.states is None else set(query.states)
    found = []
    for index in range(first, len(step.Items or ())):
        unit = step.Items[index]  # type: ignore[index]
        if (wanted is None or unit.State in wanted) and (not query.failed or failed_unit(unit)):
            found.append(item_doc(index, unit))
            if len(found) > query.limit:
                break
    return found


def owed_page(task: Task, cursor: int, query: ItemQuery) -> list[dict[str, Any]] | None:
    """Up to `query.limit` + 1 items of a step over records whose records are still owed (the
    step has just opened; the entry that inserts them has not run), as they will be stored:
    waiting, with their values. None when the step owes no records."""
    entry = next((e for e in task.Outbox if e.Kind == OutboxKind.OPEN_ITEMS and e.Body.get("Cursor") == cursor
                  and e.Body.get("Generation") == task.Generation), None)  # fmt: skip
    if entry is None:
        return None
    if query.failed or (query.states is not None and StepState.WAITING not in query.states):
        return []
    values = entry.Body.get("Values") or []
    first = 0 if query.after is None else query.after + 1
    return [item_doc(index, StepItem(Value=values[index])) for index in range(first, min(len(values), first + query.limit + 1))]


def paged(found: Iterable[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], int | None]:
    """The page and the `after` of the next one (None: this is the last)."""
    docs = list(found)
    page = docs[:limit]
    return page, page[-1]["Item"] if len(docs) > limit else None
