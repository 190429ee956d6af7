"""A `for_each` step's failure budget (`tolerate` in flows.yaml, docs/design/item-records.md,
"A failure budget"): how many of its items may fail for good without failing the step.

Pure: how many places the budget has; the item relay gives them out one at a time
(common.engine.kinds.for_each.item_tolerance).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.engine.kinds.for_each.tolerance_doc import Tolerance
from common.engine.states import StepState

# While a step runs forward, an item in one of these states failed its normal phase for good: only
# a tolerated item rolls back before the step does (docs/design/item-records.md).
FAILED_FORWARD = (StepState.FAILED, StepState.ROLLING_BACK, StepState.ROLLED_BACK, StepState.ROLLBACK_FAILED)

def budget(tolerance: Tolerance | None, item_count: int) -> int:
    """How many items may fail for good (0: none, as without a budget)."""
    if tolerance is None:
        return 0
    if tolerance.Count is not None:
        return tolerance.Count
    return int((tolerance.Percent or 0) * item_count // 100)


def budget_base(step: Any) -> int:
    """The item count a percentage is taken of: the step's items, or, while a source still pages,
    the total it reported when that is more (docs/design/item-sources.md)."""
    paging = step.Paging
    return max(step.ItemCount or 0, (paging.Total or 0) if paging is not None else 0)


def describe(tolerance: Tolerance | None) -> str:
    if tolerance is None:
        return ""
    return f"{tolerance.Count} items" if tolerance.Count is not None else f"{tolerance.Percent:g}% of items"


def failed_forward(counts: Mapping[StepState, int]) -> int:
    """How many items failed their normal phase for good, from the step's counts by state, while
    it runs forward (a wave's tally: what it shows, not what decides a budget)."""
    return sum(counts.get(state, 0) for state in FAILED_FORWARD)


describe_budget = describe  # the views' name for it


def has_budget(step: Any, item: int) -> bool:
    """Whether a failure budget covers item `item`: the step's, or one of its extensions' (its wave's)."""
    from common.engine.kinds.for_each.extending import extensions  # the kind's plug-ins, found once

    return step.Tolerate is not None or any(extension.has_budget(step, item) for extension in extensions())


def refuses_place(step: Any, item: int, taken: list[int]) -> str | None:
    """Why `item`, failed for good, may not take a place in the budgets (None: it may), `taken`
    the items holding places already: the step's budget full, or its wave's."""
    from common.engine.kinds.for_each.extending import extensions

    if not has_budget(step, item):
        return "the step has no failure budget"
    if step.Tolerate is not None and len(taken) >= budget(step.Tolerate, budget_base(step)):
        return f"past the budget: {len(taken)} items took its places"
    return next((refused for extension in extensions()
                 if (refused := extension.refuses_place(step, item, taken)) is not None), None)
