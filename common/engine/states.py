"""Every status code of a task, a step and a step run, and which changes between them are legal.

The allowed transitions are data (frozensets) with one checker, so a reader sees the whole state
machine in one screen and a bug that skips a state fails loudly instead of writing nonsense.
"""

from enum import IntEnum, StrEnum


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


class Phase(IntEnum):
    """The step message's `Type`: which half of a step runs."""

    NORMAL = 0
    ROLLBACK = 1

    @property
    def label(self) -> str:
        return self.name.lower()


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


class RunState(StrEnum):
    """State of one of the task's runs (`Runs[].State`)."""

    PENDING = "pending"  # dispatched, nobody has claimed it
    RUNNING = "running"  # claimed by `Owner`, leased until `Deadline`
    WAITING_CHILD = "waiting_child"  # a sub-flow step waiting for its child task to end
    WAITING_LOCK = "waiting_lock"  # a step with its own lock waiting for it (common/engine/gates/step_locks.py)


# Runs whose command never started (nobody claimed them): a cancel or pause may drop them.
UNCLAIMED = (RunState.PENDING, RunState.WAITING_LOCK)


class ResultCode(IntEnum):
    """A step phase's `Code`: how its last attempt ended."""

    OK = 0
    FAILED = 1  # the command raised or reported failure
    TIMED_OUT = 2  # the command ran past its timeout and was killed
    WORKER_LOST = 3  # the worker's lease lapsed (it died or froze) before it reported
    PROCESS_DIED = 4  # the child process running the command died


class IllegalTransition(Exception):
    """A transition outside the tables above: a bug in baton, never a user error."""


def check_task_transition(old: TaskStatus, new: TaskStatus) -> None:
    if old != new and (old, new) not in TASK_TRANSITIONS:
        raise IllegalTransition(f"task status {old.name} -> {new.name}")


def check_step_transition(old: StepState, new: StepState) -> None:
    if old != new and (old, new) not in STEP_TRANSITIONS:
        raise IllegalTransition(f"step state {old.value} -> {new.value}")
