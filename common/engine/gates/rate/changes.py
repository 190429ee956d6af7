"""The rate table's answers applied to a task (docs/design/rates.md), in the style of
common.engine.gates.lock.changes: `rate_taken` (the relay took the task its slot: the wait ends
and the ready roots dispatch, in the same change) and `rate_deferred` (no slot: ask again when
the next one frees)."""

from __future__ import annotations

from common.engine.core.advance import advance
from common.engine.core.units import IdFactory, Refusal, Timing, new_id, record
from common.engine.document import Task
from common.engine.states import RateState
from common.engine.gates.rate.task_rate import ask_at, described, drop_rate_entries, move_rate, waiting_for_rate
from common.engine.gates.start_at.gate import start_due
from common.engine.registry import open_after
from common.engine.states import set_waiting


def rate_taken(task: Task, key: str, at: float, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    """The rate table gave the task the slot at `at` (the table's time): it starts."""
    if not waiting_for_rate(task, key):
        return Refusal("the task does not wait for a slot of this rate")
    new = task.clone()
    rate = new.Rate
    assert rate is not None
    move_rate(rate, RateState.TAKEN)
    rate.Since, rate.NextAt = at, None
    set_waiting(new, None)
    drop_rate_entries(new)
    record(new, at, "rate_taken", actor="rate", message=f"took a start slot of rate {described(rate)}")
    open_after(new, "rate", timing.now)  # a gate after it, if one waits its turn
    advance(new, timing, "rate", ids)
    return new


def rate_deferred(task: Task, key: str, next_at: float, now: float) -> Task | Refusal:
    """No slot free: the task asks again at `next_at`, when the oldest start in the window leaves it."""
    if not waiting_for_rate(task, key):
        return Refusal("the task does not wait for a slot of this rate")
    new = task.clone()
    rate = new.Rate
    assert rate is not None
    rate.NextAt = next_at
    ask_at(new, max(next_at, start_due(new, now)))
    return new
