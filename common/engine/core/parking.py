"""A parked run (RunState.PARKED): a step that waits for someone outside the flow, holding no
slot, and the changes that end its wait (docs/design/engine.md, "Waiting outside the flow").

A kind parks a unit's run in its `start` (no message is published: no module claims it) and
gives it a deadline when it has one. Three things end the wait, each one compare-and-set of the
task: a person's action on the step (`act_on_step`, which asks the kind's `act`), the deadline
passing (the sweeper's `expire` asks the kind's `lapse`), or the task turning backward or being
cancelled (a parked run is unclaimed: it is fenced like a dispatch nobody took). The run's
outcome then concludes it exactly as a module's would: retries, routing, rollback.

What the task shows while it waits is derived, never stored: `WaitingFor` of kind step, whose
`Key` is the kind's `describe_wait`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from common.engine.codes import WaitKind
from common.engine.core.advance import conclude
from common.engine.core.units import AttemptResult, IdFactory, Refusal, Timing, new_id
from common.engine.document import Run, Task, WaitCondition
from common.engine.kinds.kind import ActRequest, StepAction
from common.engine.registry import kind_of
from common.engine.states import Phase, RunState
from common.step_index import BadStepIndex, step_index


def parked_run(task: Task, cursor: int) -> Run | None:
    """The parked normal run of step `cursor` (its first, for a step of several units)."""
    return next((r for r in task.Runs if r.Cursor == cursor and r.State is RunState.PARKED
                 and r.Phase is Phase.NORMAL), None)


def offered_actions(task: Task, cursor: int) -> tuple[StepAction, ...]:
    """The actions people may take on step `cursor` now: its kind's, while a run of it is parked."""
    kind = kind_of(task.Steps[cursor])
    return kind.actions if parked_run(task, cursor) is not None or kind.waits_unparked(task, cursor) else ()


def parked_wait(task: Task) -> WaitCondition | None:
    """`WaitingFor` of kind step, derived from the earliest parked run, or None."""
    parked = [r for r in task.Runs if r.State is RunState.PARKED]
    if not parked:
        return None
    first = min(parked, key=lambda r: r.Since or 0.0)
    step = task.Steps[first.Cursor]
    return WaitCondition(Kind=WaitKind.STEP, Key=f"{step.Name}: {kind_of(step).describe_wait(step, first)}",
                         Since=first.Since or 0.0)


def shown_wait(task: Task, item_runs: Iterable[Run] = ()) -> WaitCondition | None:
    """What the task shows as `WaitingFor`: its own stored wait, else a drained module's hold of
    one of its runs, else a parked run's wait."""
    from common.engine.gates.drain.gate import drain_wait  # a gate's derived wait comes first

    return drain_wait(task, item_runs) or parked_wait(task)


@dataclass(frozen=True)
class NoSuch(Refusal):
    """The task has no such step, or its kind no such action: `field` names which."""

    field: str = "step"


def find_step(task: Task, step: str | int) -> int | None:
    """The cursor of a step named by its name or its index, or None."""
    try:
        index = step_index(step)
    except BadStepIndex:  # callers refuse it as the request's form first (oss.services.actions)
        return None
    if index is not None:
        return index if 0 <= index < len(task.Steps) else None
    return next((i for i, s in enumerate(task.Steps) if s.Name == step), None)


def act_on_step(task: Task, step: str | int, action: str, request: ActRequest, timing: Timing,
                ids: IdFactory = new_id) -> Task | Refusal:
    """The change of a person's `action` on a step (approve, reject): the kind records it, and
    concludes the step's parked run when it ends the wait. A Refusal when the task has no such
    step, its kind no such action, the step waits for nothing now, or the kind refuses."""
    cursor = find_step(task, step)
    if cursor is None:
        return NoSuch(f"the task has no step {step!r} (steps: {', '.join(s.Name for s in task.Steps)})", "step")
    kind = kind_of(task.Steps[cursor])
    names = [a.name for a in kind.actions]
    if action not in names:
        offered = ", ".join(names) or "none"
        return NoSuch(f"step {task.Steps[cursor].Name} ({kind.name}) has no action {action!r} (its actions: {offered})",
                      "action")
    if parked_run(task, cursor) is None and kind.waits_unparked(task, cursor):
        new = task.clone()
        refused = kind.act_unparked(new, cursor, action, request, timing, ids)
        return refused if refused is not None else new
    if parked_run(task, cursor) is None:
        return Refusal(f"step {task.Steps[cursor].Name} is {task.Steps[cursor].State.value}: it waits for no {action} now")
    new = task.clone()
    run = parked_run(new, cursor)
    assert run is not None
    outcome = kind.act(new, run, action, request)
    if isinstance(outcome, Refusal):
        return outcome
    if outcome is not None:
        conclude(new, run, outcome, timing, actor=request.actor, ids=ids)
    return new


def lapsed(task: Task, run: Run, timing: Timing, ids: IdFactory) -> None:
    """In place, from the sweeper: a parked run's deadline passed; its kind says how it ends."""
    outcome: AttemptResult = kind_of(task.Steps[run.Cursor]).lapse(task, run, timing)
    conclude(task, run, outcome, timing, actor="sweeper", ids=ids)
