"""The changes of a module drain at the claim (docs/design/operations.md), pure like
common.engine.core.entries: a delivery that reaches a drained module holds the run instead of
claiming it, and the first claim after the undrain lets it go."""

from __future__ import annotations

from common.engine.document import StepMessage, Task
from common.engine.gates.drain.gate import DRAIN_RECHECK_SECONDS
from common.engine.states import RunState
from common.engine.core.units import Refusal, Timing, delivered_run, drop_outbox, record


def drain_hold(task: Task, message: StepMessage, module: str, actor: str, reason: str,
               timing: Timing) -> Task | Refusal:
    """The delivery of a pending run reached a drained module: hold the run, not claim it.

    The first hold of a run records `waiting_for_drain` naming who drained the module and why;
    later ones (each sweeper re-publication) only push the run's deadline out."""
    found = delivered_run(task, message)
    if isinstance(found, Refusal):
        return found
    if found.State is not RunState.PENDING:
        return Refusal(f"run is {found.State.value}")
    new = task.clone()
    run = new.run(message.DispatchId)
    assert run is not None
    # Delivered: its outbox entry is owed no more (a claim drops it the same way); the sweeper's
    # re-publication adds it back.
    drop_outbox(new, run.DispatchId)
    run.Deadline = timing.now + DRAIN_RECHECK_SECONDS
    if run.HeldBy is None:
        run.HeldBy, run.HeldSince = module, timing.now
        record(new, timing.now, "waiting_for_drain", run, actor=actor,
               message=f"module {module} drained by {actor}: {reason}")
    return new


def release_hold(claimed: Task, dispatch_id: str, actor: str | None, reason: str | None, now: float) -> None:
    """In place, on a task a claim just changed: the run was held by a drain that has ended."""
    run = claimed.run(dispatch_id)
    if run is None or run.HeldBy is None:
        return
    who = actor or "unknown"
    record(claimed, now, "drain_released", run, actor=who,
           message=f"module {run.HeldBy} undrained by {who}" + (f": {reason}" if reason else ""))
    run.HeldBy = run.HeldSince = None
