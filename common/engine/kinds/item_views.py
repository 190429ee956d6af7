"""What a reader is shown of a `for_each` step's items, whichever way the step keeps them: inline
in `Steps[i].Items`, or in records of their own (DESIGN.md 12.5). Pure: the records' counts and
pages are read by the caller and handed in.

A view never carries a step's items in the task: it carries their counts by state; the items
come on request, a page at a time, in item order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from common.engine.document import Step, StepItem, Task
from common.engine.states import StepState

# A step's ItemStore when its items live in records of their own (common.engine.kinds.fan_out):
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

    def __init__(self, field: str, message: str, missing: bool = False):
        super().__init__(message)
        self.field = field
        self.missing = missing  # the task has no such step (not a malformed request)


@dataclass(frozen=True)
class ItemQuery:
    states: list[StepState] | None  # None: any state
    after: int | None  # items with a higher index; None: from the first
    limit: int


def is_fan_out(step: Step) -> bool:
    """Whether the step has items to show: a `for_each` step that started (inline or records)."""
    return step.Items is not None or keeps_records(step)


def counts_view(counts: Mapping[StepState, int]) -> dict[str, int]:
    """Counts by state as shown: by state name, alphabetically, states with none left out."""
    return {state.value: counts[state] for state in sorted(counts, key=lambda s: s.value) if counts[state]}


def inline_counts(step: Step) -> dict[StepState, int]:
    return dict(Counter(item.State for item in step.Items or ()))


def item_doc(index: int, unit: StepItem | Any) -> dict[str, Any]:
    """One item as shown (before masking): its index first, then its unit state, value, output."""
    return {"Item": index, **unit.model_dump(mode="json", include=ITEM_FIELDS)}


def parse_item_query(state: str | None, after: int | None, limit: int | None) -> ItemQuery:
    """The page a request asks for. `state`: one state name or several, comma-separated."""
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
                     None if after is None or after < 0 else after, limit)


def step_cursor(task: Task, step: str) -> int:
    """The index of a step named by its index or its name; ItemQueryError("step") when the task
    has none, or it is not a fan-out step that started."""
    names = [s.Name for s in task.Steps]
    if step.isascii() and step.isdigit():
        cursor = int(step)
        if cursor >= len(task.Steps):
            raise ItemQueryError("step", f"step {cursor}: the task has steps 0 to {len(task.Steps) - 1}", missing=True)
    elif step in names:
        cursor = names.index(step)
    else:
        raise ItemQueryError("step", "the task has no step of that name or index", missing=True)
    found = task.Steps[cursor]
    if found.ForEach is None:
        raise ItemQueryError("step", f"step {cursor} ({found.Name}) is not a for_each step: it has no items")
    return cursor


def inline_page(step: Step, query: ItemQuery) -> list[dict[str, Any]]:
    """Up to `query.limit` + 1 items of an inline step (one more tells whether a page follows)."""
    first = 0 if query.after is None else query.after + 1
    wanted = None if query.states is None else set(query.states)
    found = []
    for index in range(first, len(step.Items or ())):
        unit = step.Items[index]  # type: ignore[index]
        if wanted is None or unit.State in wanted:
            found.append(item_doc(index, unit))
            if len(found) > query.limit:
                break
    return found


def paged(found: Iterable[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], int | None]:
    """The page and the `after` of the next one (None: this is the last)."""
    docs = list(found)
    page = docs[:limit]
    return page, page[-1]["Item"] if len(docs) > limit else None
