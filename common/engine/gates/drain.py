"""Module drain at the claim (DESIGN.md sec. 10): the pure changes a module process writes when
a delivery reaches it while its module is drained, and when the first claim after the undrain
lets a held run go.

The gate is the claim, not routing: routing would need every module's drain state as an input of
every transition. A held run stays PENDING with `HeldBy = <module>` and a short `Deadline`, so
the sweeper re-publishes it every `DRAIN_RECHECK_SECONDS` (common.engine.transitions.expire,
without the redispatch backoff) until a claim after the undrain takes it. `WaitingFor` of kind
drain is derived from the held runs (`drain_wait`), never stored: a change that drops a held run
(a cancel, a rollback) can never leave a stale wait behind. An item kept in a record of its own
is held the same way on its record (common.engine.kinds.item_drain).
"""

from __future__ import annotations

from collections.abc import Iterable

from common.engine.codes import WaitKind
from common.engine.document import Run, StepMessage, Task, WaitCondition
from common.engine.states import RunState
from common.engine.units import Refusal, Timing, delivered_run, drop_outbox, record

WAIT_DRAIN = WaitKind.DRAIN
# How soon the sweeper re-publishes a held run: a module's steps go at most this long (plus the
# sweep interval) after its undrain. Each look costs one write per held run.
DRAIN_RECHECK_SECONDS = 5.0


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


def drain_wait(task: Task, item_runs: Iterable[Run] = ()) -> WaitCondition | None:
    """What the task shows as `WaitingFor`: its own wait, else the drain one of its runs waits
    for (the earliest held). `item_runs`: the runs of its items kept in records, as a reader
    found them (common.engine.kinds.item_drain)."""
    if task.WaitingFor is not None:
        return task.WaitingFor
    held = [r for r in (*task.Runs, *item_runs) if r.HeldBy is not None]
    if not held:
        return None
    first = min(held, key=lambda r: r.HeldSince or 0.0)
    return WaitCondition(Kind=WAIT_DRAIN, Key=first.HeldBy, Since=first.HeldSince or 0.0)
