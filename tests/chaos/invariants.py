"""The promises a chaos run must keep, checked over the final task documents and the queues.

A pure function of what the run left behind; no I/O, so it is unit-tested on hand-made
documents (tests/chaos/test_invariants.py) and can be trusted to FAIL. The `forward` rule's
replay is tests/chaos/forward_check.py.

What is checked, per task, from the document and its History (the store's own log of every
committed change, in commit order):

final        every accepted task exists and ended SUCCESS (0), ROLLED_BACK (4) or ROLLBACK_FAILED
             (5), with no run left, a TimeEnd, and an empty Outbox (nothing owed to the broker).
once         no outcome committed twice: at most one step_succeeded/step_failed per step (one
             more per redrive for a unit failed before it), one rollback_succeeded/rollback_failed per step, one attempt_failed per (step, phase,
             attempt), never an attempt that both failed and concluded, one task_* event, and no
             dispatch claimed twice (a claim may repeat an attempt only after a `released`).
rollback     SUCCESS: every step succeeded once, in order, and nothing was rolled back but the
             items failed within their step's budget.
             ROLLED_BACK: the normal phase failed at TaskCursor, every earlier step succeeded,
             and the rollbacks committed are exactly the steps reached (TaskCursor down to 0)
             that declare one, in descending order. ROLLBACK_FAILED: a prefix of that sequence,
             ending with the one rollback_failed.
forward      no state went backwards: replaying History, every step's state changes only along
             common.engine.states.STEP_TRANSITIONS and the task's along TASK_TRANSITIONS; the replay
             ends in the document's state; nothing but `alarm_raised` and the lock's release
             (`lock_released`, `lock_kept`) follows the task_* event, but a sub-flow child's
             `undo_requested` (its parent rolls back: it rolls back all it did); every claim follows
             the dispatch of that (step, phase, attempt). A sub-flow unit's rollback outcome has no
             dispatch of its own when its child rolled itself back: it passes through rolling back.
alarm        (when alarms are given) one rollback_failed alarm per ROLLBACK_FAILED task, none
             for any other task.
queues       every queue empty, except dead-letter queues, which hold exactly what the scenario
             expects (poison messages).

Counted, never a violation (commands run at least once, by design):

executions            `claimed` events: each claim hands the command to a worker.
duplicate executions  per (step, phase): claims beyond the attempts whose verdict came from the
                      command itself (an outcome or attempt_failed committed by the worker that
                      ran it, not by the sweeper after a lease lapsed). A worker killed after its
                      claim, a lease lost while frozen, a step released at shutdown: each costs
                      one duplicate execution. (A claim whose worker died before the command
                      started counts too: the store cannot tell.)
lost attempts         attempts concluded by the sweeper (lease lapsed): the fault's footprint.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from common.engine.document import Alarm, Task
from common.engine.states import FINAL_STATUSES, Phase, StepState, TaskStatus
from common.queues import DEAD_LETTER_SUFFIX
from tests.chaos.forward_check import check_forward
from tests.chaos.history_units import (
    CONCLUSIONS,
    FINAL_EVENTS,
    SWEEPER,
    AttemptKey,
    PhaseKey,
    attempt_key,
    phase_key,
    tolerated_units,
    unit_name,
    unit_of,
)
from tests.support.graph_checks import join_violations, rollback_violations


def is_graph(task: Task) -> bool:
    """Not a line: some step waits for other than the one before it, fans out, or is a sub-flow."""
    return any((s.After is not None and s.After != ([i - 1] if i else [])) or s.ForEach or s.Flow
               for i, s in enumerate(task.Steps))


@dataclass(frozen=True)
class Violation:
    rule: str  # final | once | rollback | forward | alarm | queues | lost
    task_id: str | None
    detail: str

    def __str__(self) -> str:
        where = f"task {self.task_id}" if self.task_id else "run"
        return f"[{self.rule}] {where}: {self.detail}"


@dataclass
class TaskFigures:
    executions: int = 0
    duplicate_executions: int = 0
    duplicate_commits: int = 0
    lost_attempts: int = 0


@dataclass
class ChaosReport:
    tasks: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    executions: int = 0
    duplicate_executions: int = 0
    duplicate_commits: int = 0
    lost_attempts: int = 0
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def rules_broken(self) -> set[str]:
        return {v.rule for v in self.violations}

    def summary(self, limit: int = 20) -> str:
        lines = [f"{len(self.violations)} violation(s) over {self.tasks} task(s):"]
        lines += [f"  {v}" for v in self.violations[:limit]]
        if len(self.violations) > limit:
            lines.append(f"  ... and {len(self.violations) - limit} more")
        return "\n".join(lines)


def check_invariants(
    tasks: Iterable[Task],
    *,
    accepted: Iterable[str] | None = None,
    queues: Mapping[str, int] | None = None,
    expected_dead_letters: Mapping[str, int] | None = None,
    alarms: Iterable[Alarm] | None = None,
) -> ChaosReport:
    """Check every invariant of the module docstring; returns the figures and every violation.

    `accepted`: the TaskIds the run submitted (a missing one was lost). `queues`: messages per
    queue (ready + unacknowledged) once settled. `alarms`: the alarms in the store.
    """
    report = ChaosReport()
    by_id = {task.TaskId: task for task in tasks}
    for task_id in sorted(set(accepted or ()) - set(by_id)):
        report.violations.append(Violation("lost", task_id, "accepted but not in the store"))
    for task in by_id.values():
        report.tasks += 1
        report.statuses[task.TaskStatus.name] += 1
        violations, figures = check_task(task)
        report.violations += violations
        report.executions += figures.executions
        report.duplicate_executions += figures.duplicate_executions
        report.duplicate_commits += figures.duplicate_commits
        report.lost_attempts += figures.lost_attempts
    if alarms is not None:
        report.violations += _check_alarms(by_id.values(), alarms)
    if queues is not None:
        report.violations += _check_queues(queues, expected_dead_letters or {})
    return report


def check_task(task: Task) -> tuple[list[Violation], TaskFigures]:
    found: list[Violation] = []

    def violation(rule: str, detail: str) -> None:
        found.append(Violation(rule, task.TaskId, detail))

    _check_final(task, violation)
    figures = _check_once(task, violation)
    _check_rollbacks(task, violation)
    check_forward(task, violation)
    return found, figures


# --- final ---------------------------------------------------------------------------------------


def _check_final(task: Task, violation) -> None:
    if task.TaskStatus not in FINAL_STATUSES:
        violation("final", f"left {task.TaskStatus.name}")
    for a in task.Runs:
        violation("final", f"run left: step {a.Cursor} {a.Phase.label} attempt {a.Attempt} {a.State.value}")
    if task.Outbox:
        violation("final", f"{len(task.Outbox)} outbox entr(y/ies) never marked sent: {[e.Queue for e in task.Outbox]}")
    if task.TaskStatus in FINAL_STATUSES and task.TimeEnd is None:
        violation("final", "final without TimeEnd")


# --- once ----------------------------------------------------------------------------------------


def _check_once(task: Task, violation) -> TaskFigures:
    figures = TaskFigures()
    outcomes: Counter[PhaseKey] = Counter()
    failed_attempts: Counter[AttemptKey] = Counter()
    concluded_attempts: Counter[AttemptKey] = Counter()
    claims: Counter[AttemptKey] = Counter()
    releases: Counter[AttemptKey] = Counter()
    claims_per_phase: Counter[PhaseKey] = Counter()
    verdicts_per_phase: Counter[PhaseKey] = Counter()
    finals = 0
    last: dict[PhaseKey, str] = {}  # a unit's last outcome
    tolerated = tolerated_units(task)
    for event in task.History:
        name = event.Event
        if name == "redriven":  # each unit failed before it (but the tolerated) may conclude once more
            again = {key for key, outcome in last.items() if outcome == "step_failed" and key[0] not in tolerated}
            for key in again:
                outcomes[key] -= 1
                del last[key]
        if name == "claimed":
            claims[attempt_key(event)] += 1
            claims_per_phase[phase_key(event)] += 1
        elif name == "released":
            releases[attempt_key(event)] += 1
        elif name in CONCLUSIONS:
            concluded_attempts[attempt_key(event)] += 1
            if name == "attempt_failed":
                failed_attempts[attempt_key(event)] += 1
            else:
                outcomes[phase_key(event)] += 1
                last[phase_key(event)] = name
            if event.Actor == SWEEPER:
                figures.lost_attempts += 1
            else:
                verdicts_per_phase[phase_key(event)] += 1
        elif name in FINAL_EVENTS:
            finals += 1
        elif name == "undo_requested":  # a child's success undone: one more final event is due
            finals -= 1

    for (cursor, phase), count in outcomes.items():
        if count > 1:
            figures.duplicate_commits += count - 1
            violation("once", f"{unit_name(cursor)} {Phase(phase).label}: outcome committed {count} times")
    for (cursor, phase, attempt), count in failed_attempts.items():
        if count > 1:
            figures.duplicate_commits += count - 1
            violation("once", f"{unit_name(cursor)} {Phase(phase).label} attempt {attempt}: failure committed {count} times")
    for key, count in concluded_attempts.items():
        if failed_attempts[key] and count > failed_attempts[key]:
            figures.duplicate_commits += 1
            cursor, phase, attempt = key
            violation("once", f"{unit_name(cursor)} {Phase(phase).label} attempt {attempt}: both failed and concluded")
    for key, count in claims.items():
        allowed = 1 + releases[key]
        if count > allowed:
            figures.duplicate_commits += count - allowed
            cursor, phase, attempt = key
            violation("once", f"{unit_name(cursor)} {Phase(phase).label} attempt {attempt}: claimed {count} times, released {releases[key]}")
    if finals > 1:
        figures.duplicate_commits += finals - 1
        violation("once", f"task_* event committed {finals} times")

    figures.executions = sum(claims_per_phase.values())
    for key, count in claims_per_phase.items():
        figures.duplicate_executions += max(0, count - verdicts_per_phase[key])
    return figures


# --- rollback ------------------------------------------------------------------------------------


def expected_rollbacks(task: Task) -> list[int]:
    """The steps a failed task must roll back, in order: TaskCursor down to 0, those declaring one."""
    return [c for c in range(task.TaskCursor, -1, -1) if task.Steps[c].has_rollback and task.Steps[c].State
            not in (StepState.OPERATOR_SKIPPED, StepState.CANCELLED, StepState.WAITING)]  # never applied


def _check_rollbacks(task: Task, violation) -> None:
    # docs/design/graph-and-routing.md, "Backward": applied units undone once each, in reverse
    # topological order
    if is_graph(task):
        for problem in rollback_violations(task) + join_violations(task):
            violation("rollback", problem)
        tolerated = tolerated_units(task)
        if task.TaskStatus is TaskStatus.SUCCESS and any(e.Event.startswith("rollback_") and unit_of(e) not in tolerated
                                                         for e in task.History):
            violation("rollback", "SUCCESS but rollbacks ran")
        return
    # An operator's skip passes a step as done; a deadline (or a cancel) stops a line whose last
    # step reached may have succeeded.
    normal = [("step_succeeded" if e.Event == "operator_skipped" else e.Event, e.Cursor) for e in task.History
              if e.Event in ("step_succeeded", "step_failed", "operator_skipped")]  # fmt: skip
    stopped = any(e.Event in ("deadline_passed", "cancel_requested") for e in task.History)
    rollbacks = [(e.Event, e.Cursor) for e in task.History if e.Event in ("rollback_succeeded", "rollback_failed")]
    status = task.TaskStatus
    reached = task.TaskCursor
    if status is TaskStatus.SUCCESS:
        wanted = [("step_succeeded", c) for c in range(len(task.Steps))]
        if normal != wanted:
            violation("rollback", f"SUCCESS but normal outcomes were {normal}")
        if rollbacks:
            violation("rollback", f"SUCCESS but rollbacks ran: {rollbacks}")
        return
    if status not in (TaskStatus.ROLLED_BACK, TaskStatus.ROLLBACK_FAILED):
        return  # not final: reported by `final`
    wanted = [("step_succeeded", c) for c in range(reached)] + [("step_failed", reached)]
    if stopped and normal in (wanted[:-1], [*wanted[:-1], ("step_succeeded", reached)]):
        wanted = normal
    if any(e.Event == "undo_requested" for e in task.History):  # a child its parent undid: it had succeeded
        wanted = [("step_succeeded", c) for c in range(len(task.Steps))]
    if normal != wanted:
        violation("rollback", f"{status.name} at step {reached} but normal outcomes were {normal}")
    expected = expected_rollbacks(task)
    cursors = [cursor for _, cursor in rollbacks]
    if status is TaskStatus.ROLLED_BACK:
        if rollbacks != [("rollback_succeeded", c) for c in expected]:
            violation("rollback", f"rolled back {rollbacks}, expected steps {expected} in that order")
        return
    # ROLLBACK_FAILED: a prefix of the expected sequence, the last one failed, the others not.
    good = (
        rollbacks
        and cursors == expected[: len(cursors)]
        and [name for name, _ in rollbacks] == ["rollback_succeeded"] * (len(rollbacks) - 1) + ["rollback_failed"]
    )
    if not good:
        violation("rollback", f"ROLLBACK_FAILED after {rollbacks}, expected a prefix of steps {expected} ending in the failure")


def _check_alarms(tasks: Iterable[Task], alarms: Iterable[Alarm]) -> list[Violation]:
    raised = Counter(a.TaskId for a in alarms if a.Kind == "rollback_failed")
    found = []
    for task in tasks:
        count = raised.get(task.TaskId, 0)
        want = 1 if task.TaskStatus is TaskStatus.ROLLBACK_FAILED else 0
        if count != want:
            found.append(Violation("alarm", task.TaskId, f"{task.TaskStatus.name} with {count} rollback_failed alarm(s), expected {want}"))
    return found


def _check_queues(queues: Mapping[str, int], expected_dead_letters: Mapping[str, int]) -> list[Violation]:
    found = []
    for queue, depth in sorted(queues.items()):
        want = expected_dead_letters.get(queue, 0) if queue.endswith(DEAD_LETTER_SUFFIX) else 0
        if depth != want:
            found.append(Violation("queues", None, f"queue {queue!r} holds {depth} message(s), expected {want}"))
    for queue in sorted(set(expected_dead_letters) - set(queues)):
        if expected_dead_letters[queue]:
            found.append(Violation("queues", None, f"queue {queue!r} missing, expected {expected_dead_letters[queue]}"))
    return found
