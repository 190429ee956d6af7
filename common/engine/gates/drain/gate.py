"""Module drain at the claim (docs/design/operations.md): the pure changes a module process writes
when a delivery reaches it while its module is drained, and when the first claim after the undrain
lets a held run go.

The gate is the claim, not routing: routing would need every module's drain state as an input of
every transition. A held run stays PENDING with `HeldBy = <module>` and a short `Deadline`, so
the sweeper re-publishes it every `DRAIN_RECHECK_SECONDS` (common.engine.core.entries.expire,
without the redispatch backoff) until a claim after the undrain takes it. `WaitingFor` of kind
drain is derived from the held runs (`drain_wait`), never stored: a change that drops a held run
(a cancel, a rollback) can never leave a stale wait behind. An item kept in a record of its own
is held the same way on its record (common.engine.kinds.for_each.item_drain).
"""

from __future__ import annotations

from collections.abc import Iterable

from common.engine.codes import WaitKind
from common.engine.document import Run, Task, WaitCondition
from common.engine.gates.gate import Gate
from common.engine.states import RunState

WAIT_DRAIN = WaitKind.DRAIN
# How soon the sweeper re-publishes a held run: a module's steps go at most this long (plus the
# sweep interval) after its undrain. Each look costs one write per held run.
DRAIN_RECHECK_SECONDS = 5.0


def drain_wait(task: Task, item_runs: Iterable[Run] = ()) -> WaitCondition | None:
    """What the task shows as `WaitingFor`: its own wait, else the drain one of its runs waits
    for (the earliest held). `item_runs`: the runs of its items kept in records, as a reader
    found them (common.engine.kinds.for_each.item_drain)."""
    if task.WaitingFor is not None:
        return task.WaitingFor
    held = [r for r in (*task.Runs, *item_runs) if r.HeldBy is not None]
    if not held:
        return None
    first = min(held, key=lambda r: r.HeldSince or 0.0)
    return WaitCondition(Kind=WAIT_DRAIN, Key=first.HeldBy, Since=first.HeldSince or 0.0)


class DrainGate(Gate):
    """A drained module holds, at the claim, the runs it is sent (its changes above); the task
    shows the earliest held run's wait, derived and never stored."""

    name = "drain"
    wait_kind = WAIT_DRAIN

    def holds_run(self, task: Task, run: Run, now: float) -> WaitCondition | None:
        if run.HeldBy is None or run.State is not RunState.PENDING:
            return None
        return WaitCondition(Kind=WAIT_DRAIN, Key=run.HeldBy, Since=run.HeldSince or 0.0)
