"""What the sweeper owes a task whose wait a gate ends on its own clock (a freeze window's end) or
by a look at another task (the task it waits for): each gate's `sweep.py` (`SWEEP`), found in its
folder and asked in the registry's order, so the sweeper names no gate.

A gate's `SWEEP(task, now, read)` is pure: `read` is the caller's look at another task by id (the
sweeper's store), and its answer a `Sweep` (the change to apply by compare-and-set, what to log
once it applied) or None when the gate owes the task nothing now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from common.engine.core.declared import beside
from common.engine.core.units import Refusal, Timing
from common.engine.document import Task
from common.engine.registry import GATES

Read = Callable[[str], Task | None]


@dataclass(frozen=True)
class Sweep:
    change: Callable[[Task, Timing], Task | Refusal]
    log: str | None = None  # logged (info) once the change applied
    fields: dict[str, Any] = field(default_factory=dict)  # the log line's fields beside the task id
    flush: bool = True  # publish what the change put in the outbox at once


SweepHook = Callable[[Task, float, Read], Sweep | None]


@cache
def sweep_hooks() -> tuple[SweepHook, ...]:
    """Each gate's `SWEEP`, in the registry's order (a freeze window's before the awaited task's)."""
    return tuple(module.SWEEP for module in beside(GATES, "sweep"))


def sweep_waits(task: Task, now: float, read: Read) -> Sweep | None:
    """The change the first gate owes the task now, if any."""
    return next((found for hook in sweep_hooks() if (found := hook(task, now, read)) is not None), None)
