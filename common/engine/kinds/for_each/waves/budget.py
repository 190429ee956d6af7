"""A failure budget per wave (docs/design/waves.md, "Budgets per wave"): an item failing for good
is tolerated only within its wave's budget (when its wave gives one) and within the step's (when
the step gives one). Pure: the places already taken (the step's ToleratedItems) decide whether
one more may be taken (common.engine.kinds.for_each.budget.refuses_place)."""

from __future__ import annotations

from common.engine.document import Step
from common.engine.kinds.for_each.budget import budget
from common.engine.kinds.for_each.tolerance_doc import Tolerance
from common.engine.kinds.for_each.waves.sizes import OPEN_END, bounds, spec_of, wave_of


def wave_budget(step: Step, item: int) -> tuple[Tolerance, int, int] | None:
    """The budget of the wave item `item` is in, and that wave's items [start, end); None: none."""
    if step.Wave is None or not step.Waves:
        return None
    index = wave_of(step.Wave.Ends, item)
    tolerance = spec_of(step.Waves, index).Tolerate
    if tolerance is None:
        return None
    start, end = bounds(step.Wave.Ends, index)
    if end == OPEN_END and step.Paging is not None:  # a `rest` wave while its source pages: of what is known
        paging = step.Paging
        end = max(start, paging.Total if paging.Total is not None else paging.Fetched)
    return tolerance, start, end


def refuses_wave_place(step: Step, item: int, taken: list[int]) -> str | None:
    """Why `item`, failed for good, may not take a place in its wave's budget (None: it may, or
    its wave gives none), `taken` the items holding places in the step's budgets already."""
    own = wave_budget(step, item)
    if own is not None:
        tolerance, start, end = own
        in_wave = sum(1 for place in taken if start <= place < end)
        if in_wave >= budget(tolerance, end - start):
            return f"past its wave's budget: {in_wave} items of the wave took its places"
    return None
