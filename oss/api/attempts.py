"""Every attempt of every step phase, as the task's history tells it (pure: no I/O).

The task document keeps only each phase's LAST outcome (Code, Message, times); the history
keeps every event with its Cursor, Phase, Attempt and Time. An attempt begins with `claimed`
(a worker took the dispatch) and ends with the next outcome event of the same step and phase:
`attempt_failed` (another attempt follows), `step_failed` / `rollback_failed`,
`step_succeeded` / `rollback_succeeded`, `stopped` (a cancel stopped it now), or `released`
(its module shut down under it: not counted, the same attempt number is dispatched again). A
dispatch nobody claimed never ran and is no attempt. A command that answers "check again later"
(`check_again`) goes on with the same attempt: its checks (a claim each) make one attempt, shown
"checking again" in between. An operator's retry starts a new run (`retried`): attempts carry
the run they belong to, since numbers start again at 1.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from common.engine.document import Task
from common.engine.states import RunState

# Outcome event -> what the attempt's outcome is called.
_ENDINGS = {
    "step_succeeded": "ok",
    "rollback_succeeded": "ok",
    "attempt_failed": "failed, retried",
    "step_failed": "failed",
    "rollback_failed": "failed",
    "released": "released",
    "stopped": "stopped by an operator",  # a cancel with stop_running; the message is their reason
}
CHECKING_AGAIN = "checking again"  # its command answered "not done yet": one attempt spans every check


class AttemptView(BaseModel):
    Run: int = Field(description="0 for the first run; an operator's retry starts run 1, 2...")
    Cursor: int
    Item: int | None = Field(None, description="The item of a for_each step; null for a plain step")
    Phase: int = Field(description="0 normal, 1 rollback")
    Attempt: int = Field(description="1-based, per step, phase and run")
    Worker: str | None
    TimeStart: float = Field(description="When a worker claimed it")
    TimeEnd: float | None = Field(description="null: still running, or its end was not recorded")
    Outcome: str = Field(
        description='"ok", "failed", "failed, retried", "stopped by an operator" (a cancel with stop_running), '
        '"released" (its module shut down: '
        'dispatched again), "checking again" (not done yet: its command is asked again later), "running", '
        'or "unfinished"'
    )
    Message: str = Field(description="Its error (secrets masked), or how it ended")


def attempts(task: Task) -> list[AttemptView]:
    """In the order they started. Pass the masked task: messages are shown as they are."""
    found: list[AttemptView] = []
    # (cursor, item, phase) -> the attempt running there: one per unit (a step, or an item)
    open_: dict[tuple[int, int | None, int], AttemptView] = {}
    run = 0
    for event in task.History:
        if event.Event == "retried":
            run += 1
            open_.clear()
            continue
        if event.Cursor is None or event.Phase is None:
            continue
        key = (event.Cursor, event.Item, int(event.Phase))
        waiting = open_.get(key)
        if event.Event == "check_again" and waiting is not None:
            # "Not done yet": the same attempt goes on at its next check (a run each, no slot held).
            waiting.Outcome, waiting.Message = CHECKING_AGAIN, event.Message
            continue
        if event.Event == "claimed" and waiting is not None and waiting.Outcome == CHECKING_AGAIN \
                and waiting.Attempt == (event.Attempt or 1):
            waiting.Outcome, waiting.Worker = "unfinished", event.Actor
            continue
        if event.Event == "claimed":
            attempt = AttemptView(
                Run=run, Cursor=event.Cursor, Item=event.Item, Phase=int(event.Phase), Attempt=event.Attempt or 1,
                Worker=event.Actor, TimeStart=event.Time, TimeEnd=None, Outcome="unfinished",
                Message="",
            )  # fmt: skip
            found.append(attempt)
            open_[key] = attempt
        elif event.Event in _ENDINGS and key in open_:
            attempt = open_.pop(key)
            attempt.TimeEnd = event.Time
            attempt.Outcome = _ENDINGS[event.Event]
            attempt.Message = event.Message
    for active in task.Runs:
        if active.State is RunState.RUNNING:
            current = open_.get((active.Cursor, active.Item, int(active.Phase)))
            if current is not None:
                current.Outcome = "running"
    return found
