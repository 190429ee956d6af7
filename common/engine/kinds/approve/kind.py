"""An approval step (docs/guide/approvals.md): its run is parked (common.engine.core.parking)
until enough distinct people approve, one rejects, or its timeout passes.

Each decision is one compare-and-set of the task: two people approving at the same moment on two
OSS processes are applied one after the other, the second on what the first wrote, so neither
is lost nor counted twice, and a person who decided already is refused (the same token's name).
"""

from __future__ import annotations

from collections.abc import Mapping

from common.engine.core.units import AttemptResult, Forbidden, Refusal, Timing, begin_attempt, record, unit_name
from common.engine.document import Run, Step, Task
from common.engine.kinds.approve.fields import APPROVE, REJECT, ApprovalRule, Decision
from common.engine.kinds.approve.spec import ApprovePart
from common.engine.kinds.kind import ActRequest, StepAction, StepKind, StepShown
from common.engine.states import ResultCode, RunState, StepState, move_run

REQUESTED, GIVEN, REFUSED = "approval_requested", "approval_given", "approval_refused"
REJECTED = "rejected"  # how a rejected approval step reads (StepShown.state)


class ApproveKind(StepKind):
    name = "approve"
    spec = ApprovePart()
    events = (REQUESTED, GIVEN, REFUSED)
    actions = (
        StepAction(APPROVE, "Approve", "Count one approval; the step succeeds once enough people approved"),
        StepAction(REJECT, "Reject", "The step fails: the task's failure policy applies (its rollback)"),
    )

    def unit_gated(self, step: Step) -> bool:
        return False  # it holds nothing a step lock would guard

    def run_deadline(self, step: Step, timing: Timing, due_at: float) -> float | None:
        timeout = _rule(step).Timeout
        return None if timeout is None else max(due_at, timing.now) + timeout

    def start(self, task: Task, run: Run, timing: Timing, due_at: float) -> None:
        move_run(run, RunState.PARKED)  # nobody claims it: people end it, or its timeout
        begin_attempt(task, run, timing.now)
        record(task, timing.now, REQUESTED, run, actor="oss", message=self.describe_wait(task.Steps[run.Cursor], run))
        return None

    def act(self, task: Task, run: Run, action: str, request: ActRequest) -> AttemptResult | Refusal | None:
        step = task.Steps[run.Cursor]
        rule = _rule(step)
        name = unit_name(task, run.unit)
        if not request.roles & set(rule.Roles):
            return Forbidden(f"{request.actor} may not {action} {name}: it needs a token of role "
                             f"{' or '.join(rule.Roles)}")
        if rule.NotSubmitter and request.actor == task.SubmittedBy:
            return Forbidden(f"{request.actor} submitted the task: {name} needs another person's decision")
        earlier = next((d for d in step.Decisions if d.Actor == request.actor), None)
        if earlier is not None:
            return Refusal(f"{request.actor} decided already on {name} ({earlier.Decision}): one decision per person")
        step.Decisions.append(Decision(Actor=request.actor, Decision=action, Reason=request.reason, Time=request.time))
        record(task, request.time, GIVEN if action == APPROVE else REFUSED, run, actor=request.actor,
               message=request.reason)
        if action == REJECT:
            return AttemptResult(ResultCode.FAILED, f"rejected by {request.actor}: {request.reason}", retryable=False)
        approvers = _approvers(step)
        if len(approvers) >= rule.Count:
            return AttemptResult(ResultCode.OK, f"approved by {', '.join(approvers)}")
        return None  # it waits for more

    def needs_submitter(self, step: Step) -> bool:
        return _rule(step).NotSubmitter

    def lapse(self, task: Task, run: Run, timing: Timing) -> AttemptResult:
        rule = _rule(task.Steps[run.Cursor])
        said = f"no decision within {_duration(rule.Timeout or 0)}"
        if rule.OnTimeout == APPROVE:
            return AttemptResult(ResultCode.OK, f"{said}: approved, as its on_timeout says")
        return AttemptResult(ResultCode.TIMED_OUT, f"{said}: rejected, as its on_timeout says", retryable=False)

    def reset(self, step: Step) -> None:
        step.Decisions = []  # a new generation asks again

    def describe(self, step: Step, counts: Mapping[str, int] | None = None) -> StepShown:
        rule = _rule(step)
        # Its approvals are not items: told in the note, not in `total`/`done`.
        return StepShown(kind=self.name, note=f"approval: {len(_approvers(step))}/{rule.Count} by {'/'.join(rule.Roles)}",
                         state=self.shown_state(step))

    def shown_state(self, step: Step) -> str | None:
        return REJECTED if rejected(step) else None

    def describe_wait(self, step: Step, run: Run) -> str:
        rule = _rule(step)
        left = rule.Count - len(_approvers(step))
        return f"{left} more approval{'s' if left != 1 else ''} by {' or '.join(rule.Roles)}"


def rejected(step: Step) -> bool:
    """A person rejected it, or its timeout did (on_timeout: reject): its normal phase failed. The
    stored state stays `failed` or `skipped` (what every reader knows); the surfaces say `rejected`."""
    return step.State in (StepState.FAILED, StepState.SKIPPED) and step.Code not in (None, ResultCode.OK)


def _rule(step: Step) -> ApprovalRule:
    return step.Approve or ApprovalRule()


def _approvers(step: Step) -> list[str]:
    return [d.Actor for d in step.Decisions if d.Decision == APPROVE]


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
