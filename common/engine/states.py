"""Every status code of a task, a step and a step run, and which changes between them are legal.

The allowed transitions are data (frozensets) with one checker, so a reader sees the whole state
machine in one screen and a bug that skips a state fails loudly instead of writing nonsense.
"""

from dataclasses import dataclass
from enum import Enum, IntEnum, StrEnum
from typing import Any

from common.engine.codes import DERIVED_WAITS, WaitKind
from common.quick_enum import quick_value
from common.engine.core.declared import declared


@quick_value
class TaskStatus(IntEnum):
    """`TaskStatus` of the task document (codes 0-3 are the original spec's)."""

    SUCCESS = 0  # every normal step succeeded
    NOT_STARTED = 1  # accepted; step 0 dispatched (or waiting for its start time), not yet claimed
    RUNNING = 2  # a normal step has been claimed, or a sub-flow step has asked for its child task
    ROLLING_BACK = 3  # a normal step failed; rollbacks are running in reverse topological order
    ROLLED_BACK = 4  # FAILED (or cancelled), and every step that ran was rolled back cleanly
    ROLLBACK_FAILED = 5  # FAILED, and a rollback step failed: alarm raised, an operator must act


def parse_task_status(text: str) -> TaskStatus:
    """A status as clients write it: its code ("4") or its name ("rolled_back", any case)."""
    cleaned = text.strip()
    try:
        # ASCII only: "٣".isdigit() and int("٣") == 3, and "ſuccess".upper() == "SUCCESS".
        if not cleaned.isascii():
            raise ValueError
        return TaskStatus(int(cleaned)) if cleaned.isdigit() else TaskStatus[cleaned.upper()]
    except (KeyError, ValueError):
        names = ", ".join(f"{s.value} {s.name}" for s in TaskStatus)
        raise ValueError(f"not a status; use one of {names}") from None


# A cancelled task ends ROLLED_BACK like a failed one (its TaskMessage and history say who
# cancelled it and why): it needs no code of its own, and clients of codes 0-5 keep working.


FINAL_STATUSES = frozenset({TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK, TaskStatus.ROLLBACK_FAILED})

TASK_TRANSITIONS: frozenset[tuple[TaskStatus, TaskStatus]] = frozenset(
    {
        (TaskStatus.NOT_STARTED, TaskStatus.RUNNING),
        (TaskStatus.RUNNING, TaskStatus.SUCCESS),
        (TaskStatus.RUNNING, TaskStatus.ROLLING_BACK),
        (TaskStatus.RUNNING, TaskStatus.ROLLED_BACK),  # failed step had nothing to roll back
        (TaskStatus.ROLLING_BACK, TaskStatus.ROLLED_BACK),
        (TaskStatus.ROLLING_BACK, TaskStatus.ROLLBACK_FAILED),
        # Operator actions (common.engine.operator.actions):
        (TaskStatus.NOT_STARTED, TaskStatus.ROLLED_BACK),  # cancelled before step 0 was claimed
        (TaskStatus.NOT_STARTED, TaskStatus.ROLLING_BACK),  # a root failed before any claim
        (TaskStatus.ROLLED_BACK, TaskStatus.NOT_STARTED),  # retry: the flow starts again at step 0
        (TaskStatus.ROLLBACK_FAILED, TaskStatus.ROLLING_BACK),  # retry-rollback, or compensate
        (TaskStatus.ROLLBACK_FAILED, TaskStatus.ROLLED_BACK),  # compensated; nothing earlier to undo
        # A sub-flow's child whose parent rolls back: its applied steps are undone.
        (TaskStatus.SUCCESS, TaskStatus.ROLLING_BACK),
    }
)


@quick_value
class Phase(IntEnum):
    """The step message's `Type`: which half of a step runs."""

    NORMAL = 0
    ROLLBACK = 1

    @property
    def label(self) -> str:
        return self.name.lower()


@quick_value
class StepState(StrEnum):
    """Where one step stands. Kept per step in the task document as `State`."""

    WAITING = "waiting"  # not reached yet
    RUNNING = "running"  # normal phase dispatched or running
    SUCCEEDED = "succeeded"  # normal phase done
    FAILED = "failed"  # normal phase failed; its own rollback comes next (it may have left debris)
    ROLLING_BACK = "rolling_back"  # rollback phase dispatched or running
    ROLLED_BACK = "rolled_back"  # rollback phase done
    ROLLBACK_FAILED = "rollback_failed"  # rollback phase failed: see the task's alarm
    SKIPPED = "skipped"  # declared no rollback, passed over while rolling back
    CANCELLED = "cancelled"  # dispatched, then cancelled before anyone claimed it: never ran
    COMPENSATED = "compensated"  # its rollback failed; an operator undid it by hand
    # An operator skipped it (common.engine.operator.flow.skip): the flow goes on as if it succeeded;
    # nothing of it is rolled back (it did not do its work, or the operator took it over).
    OPERATOR_SKIPPED = "operator_skipped"


# A unit in one of these states lets the steps that wait for it start.
DONE_FORWARD = frozenset({StepState.SUCCEEDED, StepState.OPERATOR_SKIPPED})
# A unit in one of these has done (part of) its work: it is rolled back, or passed over backward.
APPLIED = frozenset({StepState.SUCCEEDED, StepState.FAILED})
# A dependent in one of these states no longer holds its predecessors' rollback back.
SETTLED_BACKWARD = frozenset(
    {StepState.ROLLED_BACK, StepState.SKIPPED, StepState.COMPENSATED, StepState.CANCELLED, StepState.WAITING,
     StepState.OPERATOR_SKIPPED}
)


STEP_TRANSITIONS: frozenset[tuple[StepState, StepState]] = frozenset(
    {
        (StepState.WAITING, StepState.RUNNING),
        (StepState.RUNNING, StepState.SUCCEEDED),
        (StepState.RUNNING, StepState.FAILED),
        (StepState.SUCCEEDED, StepState.ROLLING_BACK),
        (StepState.FAILED, StepState.ROLLING_BACK),
        (StepState.SUCCEEDED, StepState.SKIPPED),
        (StepState.FAILED, StepState.SKIPPED),
        (StepState.ROLLING_BACK, StepState.ROLLED_BACK),
        (StepState.ROLLING_BACK, StepState.ROLLBACK_FAILED),
        # Operator actions (common.engine.operator.actions):
        (StepState.RUNNING, StepState.CANCELLED),  # its dispatch was cancelled before a claim
        (StepState.ROLLED_BACK, StepState.WAITING),  # retry: every step runs again, from step 0
        (StepState.SKIPPED, StepState.WAITING),
        (StepState.CANCELLED, StepState.WAITING),
        (StepState.COMPENSATED, StepState.WAITING),
        (StepState.OPERATOR_SKIPPED, StepState.WAITING),
        (StepState.RUNNING, StepState.WAITING),  # pause: its dispatch withdrawn before a claim
        (StepState.RUNNING, StepState.OPERATOR_SKIPPED),  # skip a unit that keeps failing
        (StepState.WAITING, StepState.OPERATOR_SKIPPED),  # skip in a retry of a rolled-back task
        (StepState.FAILED, StepState.WAITING),
        (StepState.ROLLBACK_FAILED, StepState.ROLLING_BACK),  # retry-rollback
        (StepState.ROLLBACK_FAILED, StepState.COMPENSATED),  # compensated by hand
    }
)


_RUNS = declared("RUN_STATES")
# State of one of the task's runs (`Runs[].State`): the engine's own, and each plug-in's
# (`RUN_STATES` in its folder's declares.py: a sub-flow's run its child runs, a step's run waiting
# for its own lock or rate).
RunState = quick_value(StrEnum("RunState", [  # type: ignore[misc]
    ("PENDING", "pending"),  # dispatched, nobody has claimed it
    ("RUNNING", "running"),  # claimed by `Owner`, leased until `Deadline`
    *((member, value) for member, (value, _) in _RUNS.items()),
    # Parked by its step's kind: it waits for someone outside the flow (approvers, another system)
    # and holds no slot of any module; its kind says what it waits for (`StepKind.describe_wait`),
    # what ends it (`StepKind.act`) and what its deadline means (`StepKind.lapse`).
    ("PARKED", "parked"),
], module=__name__))
RunState.__doc__ = "State of one of the task's runs (`Runs[].State`)."


RUN_TRANSITIONS: frozenset[tuple[RunState, RunState]] = frozenset(
    {
        # A run is born PENDING (common.engine.core.units.add_run) and leaves `Runs` when it concludes.
        (RunState.PENDING, RunState.RUNNING),  # claimed by a module
        (RunState.PENDING, RunState.PARKED),  # its kind parks it: no module claims it
    }
    | {(RunState(old), RunState(new)) for rows in declared("RUN_TRANSITIONS").values() for old, new in rows}
)


# Runs whose command never started (nobody claimed them): a cancel or pause may drop them (a
# plug-in's run state says whether it is one). A parked run has nothing under way either: a
# cancel fences it at once (a pause leaves it: its attempt has begun, as a claimed run's has).
UNCLAIMED = (RunState.PENDING, *(RunState(value) for value, unclaimed in _RUNS.values() if unclaimed),
             RunState.PARKED)


@quick_value
class ResultCode(IntEnum):
    """A step phase's `Code`: how its last attempt ended."""

    OK = 0
    FAILED = 1  # the command raised or reported failure
    TIMED_OUT = 2  # the command ran past its timeout and was killed
    WORKER_LOST = 3  # the worker's lease lapsed (it died or froze) before it reported
    PROCESS_DIED = 4  # the child process running the command died
    # It may or may not have acted, and its verify could not tell within the limit
    # (docs/design/runtime.md, "Verifying an unknown outcome").
    OUTCOME_UNKNOWN = 5


@quick_value
class LockState(StrEnum):
    """Where a task stands with its lock (`Task.Lock.State`, common.engine.gates.lock.task_lock), and a
    unit with its step lock (`Task.UnitLocks[].State`: waiting or held only)."""

    PENDING = "pending"  # not asked for yet: the task waits for another task first
    WAITING = "waiting"  # in the key's line
    HELD = "held"
    KEPT = "kept"  # its rollback failed: held until an operator ends the task
    RELEASED = "released"


@quick_value
class RateState(StrEnum):
    """Where a task stands with its type's rate (`Task.Rate.State`, common.engine.gates.rate)."""

    PENDING = "pending"  # asked for once the gates before it let the task go
    WAITING = "waiting"  # asked for: it waits for a start slot
    TAKEN = "taken"  # its slot is taken: it started


RATE_TRANSITIONS: frozenset[tuple[RateState, RateState]] = frozenset(
    {
        (RateState.PENDING, RateState.WAITING),  # its gate opened
        (RateState.WAITING, RateState.TAKEN),  # the rate table gave it a slot
        (RateState.WAITING, RateState.PENDING),  # an operator's retry: asks again when its gate opens
        (RateState.TAKEN, RateState.PENDING),  # an operator's retry of a task that had started
    }
)


# None: the task has no lock (yet) or the unit none in its list.
LOCK_TRANSITIONS: frozenset[tuple[LockState | None, LockState | None]] = frozenset(
    {
        (None, LockState.WAITING),  # asked for when the task is created
        (None, LockState.PENDING),  # deferred: the task waits for another task first
        (LockState.PENDING, LockState.WAITING),  # the awaited task succeeded
        (LockState.WAITING, LockState.HELD),  # granted by the lock table
        (LockState.PENDING, LockState.RELEASED),  # ended before asking: nothing to give back
        (LockState.WAITING, LockState.RELEASED),  # ended in line: it leaves
        (LockState.HELD, LockState.RELEASED),
        (LockState.HELD, LockState.KEPT),  # its rollback failed
        (LockState.WAITING, LockState.KEPT),  # its rollback failed while a grant was on its way
        (LockState.KEPT, LockState.RELEASED),  # an operator ended the task
        (LockState.RELEASED, LockState.WAITING),  # an operator's retry: in line again
    }
)

UNIT_LOCK_TRANSITIONS: frozenset[tuple[LockState | None, LockState | None]] = frozenset(
    {
        (None, LockState.WAITING),  # the unit's run waits for its step's lock
        (LockState.WAITING, LockState.HELD),
        (LockState.WAITING, None),  # the unit settled or was cancelled in line: it leaves
        (LockState.HELD, None),  # released
    }
)

# What a not-started task waits for (`Task.WaitingFor.Kind`); None: nothing. Any wait may begin
# (the task is created waiting, or an earlier wait ended) and end (its gate let go, the task ended
# in line, an operator ran it now), and give way to a wait after it in WaitKind's order (a freeze
# window ended: now the task it was created after; that task succeeded: now its lock).
_STORED_WAITS = [kind for kind in WaitKind if kind not in DERIVED_WAITS]
WAIT_TRANSITIONS: frozenset[tuple[WaitKind | None, WaitKind | None]] = frozenset(
    {(None, kind) for kind in _STORED_WAITS} | {(kind, None) for kind in _STORED_WAITS}
    | {(earlier, later) for n, earlier in enumerate(_STORED_WAITS) for later in _STORED_WAITS[n + 1:]}
)


@dataclass(frozen=True)
class Machine:
    """One state machine: its name (for the error) and its legal changes."""

    name: str
    legal: frozenset[tuple[Any, Any]]


TASKS = Machine("task status", TASK_TRANSITIONS)
STEPS = Machine("step state", STEP_TRANSITIONS)
RUNS = Machine("run state", RUN_TRANSITIONS)
LOCKS = Machine("lock state", LOCK_TRANSITIONS)
UNIT_LOCKS = Machine("step lock state", UNIT_LOCK_TRANSITIONS)
WAITS = Machine("wait", WAIT_TRANSITIONS)
RATES = Machine("rate state", RATE_TRANSITIONS)
MACHINES = (TASKS, STEPS, RUNS, LOCKS, UNIT_LOCKS, WAITS, RATES)


class IllegalTransition(Exception):
    """A transition outside the tables above: a bug in baton, never a user error."""


def check_transition(machine: Machine, old: Any, new: Any) -> None:
    """The one checker: staying is always legal, a change must be in the machine's table."""
    if old != new and (old, new) not in machine.legal:
        raise IllegalTransition(f"{machine.name} {_label(old)} -> {_label(new)}")


def _label(state: Any) -> str:
    if state is None:
        return "none"
    return state.name if isinstance(state, IntEnum) else str(state.value if isinstance(state, Enum) else state)


def check_task_transition(old: TaskStatus, new: TaskStatus) -> None:
    check_transition(TASKS, old, new)


def check_step_transition(old: StepState, new: StepState) -> None:
    check_transition(STEPS, old, new)


def move_run(run: Any, new: RunState) -> None:
    """In place: a run (of the task or of an item record) changes state."""
    check_transition(RUNS, run.State, new)
    run.State = new


def move_lock(lock: Any, new: LockState, machine: Machine = LOCKS) -> None:
    """In place: a task's lock (or, with UNIT_LOCKS, a unit's step lock) changes state."""
    check_transition(machine, None if lock is None else lock.State, new)
    lock.State = new


def set_waiting(task: Any, condition: Any) -> None:
    """In place: what a not-started task waits for (`Task.WaitingFor`, None for nothing)."""
    old = None if task.WaitingFor is None else task.WaitingFor.Kind
    check_transition(WAITS, old, None if condition is None else condition.Kind)
    task.WaitingFor = condition
