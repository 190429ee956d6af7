"""A `for_each` step's own state and outcome, derived from its items (docs/design/task-document.md,
"Units").

Pure functions over "the step and its items", so a reader that knows only steps (the API's task
view, `baton get`, the console, the event stream) sees what a plain step would show:
when the step started and ended, how its normal phase and its rollback ended, how many attempts
it took. The items are passed in, not read from the step, so they may come from elsewhere.

`summarize` gives the `State` (kept current by every transition: routing reads it); `outcome`
gives the rest, applied whenever the task is serialised (`Task.to_doc`, `to_json`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

from common.engine.states import APPLIED, DONE_FORWARD, SETTLED_BACKWARD, ResultCode, StepState

# Items in these states have nothing of their normal phase left to run, whatever the task does.
_NORMAL_ONGOING = frozenset({StepState.RUNNING})


class UnitState(Protocol):
    """What is read of a step or an item (common.engine.document.UnitState, which imports this module)."""

    State: StepState
    Code: ResultCode | None
    Message: str
    TimeStart: float | None
    TimeEnd: float | None
    Attempts: int
    RollbackCode: ResultCode | None
    RollbackMessage: str
    RollbackTimeStart: float | None
    RollbackTimeEnd: float | None
    RollbackAttempts: int


@dataclass(frozen=True)
class StepOutcome:
    """The step-level fields a plain step keeps itself (their names are the step's)."""

    Code: ResultCode | None
    Message: str
    TimeStart: float | None
    TimeEnd: float | None
    Attempts: int
    RollbackCode: ResultCode | None
    RollbackMessage: str
    RollbackTimeStart: float | None
    RollbackTimeEnd: float | None
    RollbackAttempts: int


def summarize(state: StepState, items: Sequence[UnitState]) -> StepState:
    """A for_each step's own State from its items' (`state`: the step's, kept while it has no
    items: not opened, or zero items). The first rule that holds wins."""
    if not items:
        return state
    states = {item.State for item in items}
    for marker in (StepState.ROLLBACK_FAILED, StepState.ROLLING_BACK, StepState.RUNNING, StepState.FAILED):
        if marker in states:
            return marker
    if states <= DONE_FORWARD:  # an item an operator skipped counts as done
        return StepState.SUCCEEDED
    if StepState.SUCCEEDED in states:  # partly undone, or partly done
        return StepState.ROLLING_BACK if states & SETTLED_BACKWARD - {StepState.WAITING} else StepState.RUNNING
    for outcome in (StepState.ROLLED_BACK, StepState.COMPENSATED, StepState.SKIPPED, StepState.CANCELLED):
        if outcome in states:
            return outcome
    return StepState.WAITING


def outcome(step: UnitState, items: Sequence[UnitState]) -> StepOutcome:
    """The step's outcome from its items (`step`: its own fields, kept while it has no items).

    - TimeStart: the first item's start (the step's own, when it opened, before any item started);
      TimeEnd: the last item's end, once no item is left to run forward.
    - Code, Message: OK once every item is done (succeeded or skipped by an operator); else those
      of the first item to fail (by its end time), its message prefixed "item <i>: "; else None.
    - Attempts, RollbackAttempts: the sum over the items (the work done; each item's own count is
      on the item).
    - RollbackTimeStart: the first item rollback's start; RollbackTimeEnd: the last one's end,
      once none runs and none is left to undo (or one failed: nothing more is undone).
    - RollbackCode, RollbackMessage: those of the first item whose rollback failed; else OK once
      the rollback is over and an item was undone; else None.
    """
    if not items:
        return StepOutcome(step.Code, step.Message, step.TimeStart, step.TimeEnd, step.Attempts, step.RollbackCode,
                           step.RollbackMessage, step.RollbackTimeStart, step.RollbackTimeEnd, step.RollbackAttempts)
    states = [item.State for item in items]
    state = summarize(step.State, items)
    forward_over = not _NORMAL_ONGOING & set(states) and state not in (StepState.WAITING, StepState.RUNNING)
    code, message = _normal_code(items)
    rolled = [item for item in items if item.RollbackTimeStart is not None or item.RollbackCode is not None]
    rollback_failed = _first_failed(items, rollback=True)
    backward_over = StepState.ROLLING_BACK not in states and (
        rollback_failed is not None or not any(s in APPLIED for s in states))
    if rollback_failed is not None:
        index, failed = rollback_failed
        rollback_code, rollback_message = failed.RollbackCode, f"item {index}: {failed.RollbackMessage}"
    else:
        rollback_code, rollback_message = (ResultCode.OK if rolled and backward_over else None), ""
    return StepOutcome(
        Code=code,
        Message=message,
        TimeStart=_first(item.TimeStart for item in items) or step.TimeStart,
        TimeEnd=_last(item.TimeEnd for item in items) if forward_over else None,
        Attempts=sum(item.Attempts for item in items),
        RollbackCode=rollback_code,
        RollbackMessage=rollback_message,
        RollbackTimeStart=_first(item.RollbackTimeStart for item in items),
        RollbackTimeEnd=_last(item.RollbackTimeEnd for item in items) if rolled and backward_over else None,
        RollbackAttempts=sum(item.RollbackAttempts for item in items),
    )


def apply(step: UnitState, items: Sequence[UnitState]) -> None:
    """Write `outcome` into the step (in place); a step without items keeps its own."""
    if items:
        for name, value in asdict(outcome(step, items)).items():
            setattr(step, name, value)


def _normal_code(items: Sequence[UnitState]) -> tuple[ResultCode | None, str]:
    if all(item.State in DONE_FORWARD for item in items):
        return ResultCode.OK, ""
    failed = _first_failed(items, rollback=False)
    if failed is None:
        return None, ""
    index, item = failed
    return item.Code, f"item {index}: {item.Message}"


def _first_failed(items: Sequence[UnitState], *, rollback: bool) -> tuple[int, UnitState] | None:
    """The item whose (rollback) phase failed first, by its end time, then by index."""
    failed = [
        (item.RollbackTimeEnd if rollback else item.TimeEnd, index, item)
        for index, item in enumerate(items)
        if (item.RollbackCode if rollback else item.Code) not in (None, ResultCode.OK)
        and (rollback or item.State not in DONE_FORWARD)
    ]
    if not failed:
        return None
    _, index, item = min(failed, key=lambda f: (f[0] if f[0] is not None else float("inf"), f[1]))
    return index, item


def _first(times: Iterable[float | None]) -> float | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None


def _last(times: Iterable[float | None]) -> float | None:
    known = [t for t in times if t is not None]
    return max(known) if known else None
