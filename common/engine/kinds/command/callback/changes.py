"""The change of a callback (`POST /api/v1/callbacks/{token}`): one compare-and-set of the task
the token names. A parked run ends with the answer as a module's outcome would (retries,
routing, rollback); a run whose command still runs keeps it until the command parks; a heartbeat
moves the wait's deadline. A token spent already, or unknown, is refused and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from common.engine.core.advance import conclude
from common.engine.core.units import IdFactory, Refusal, Timing, new_id, record
from common.engine.document import Task
from common.engine.kinds.command.callback.fields import HEARTBEAT, SUCCEED, Action, KeptAnswer
from common.engine.kinds.command.callback.wait import (
    answer_result, spend, spent_reason, spent_token, wait_deadline, waiting_run,
)
from common.engine.states import RunState


@dataclass(frozen=True)
class CallbackRefused(Refusal):
    """Why a callback changes nothing, and its HTTP status: 404 (no such token), 409 (answered
    already), 410 (its wait is over), 422 (`field`: an output key it may not set)."""

    status: int = 404
    field: str | None = None


@dataclass(frozen=True)
class CallbackTaken:
    """What a callback did: the task to write (None: nothing changed) and the run's state now
    (waiting, kept, succeeded, failed)."""

    task: Task | None
    state: str
    cursor: int
    attempt: int
    phase: str = "normal"  # the run's phase, as logs name it


UNKNOWN = CallbackRefused("no such callback token", 404)


def answer_callback(task: Task, hashed: str, action: Action, output: dict[str, Any], message: str,
                    retryable: bool, timing: Timing, ids: IdFactory = new_id) -> CallbackTaken | CallbackRefused:
    """The callback of the token whose hash is `hashed`, taken on `task` (the caller checked the
    output's limits)."""
    found = waiting_run(task, hashed)
    if found is None or found.State not in (RunState.RUNNING, RunState.PARKED):
        spent = spent_token(task, hashed)
        if spent is None:
            return UNKNOWN
        status, reason = spent_reason(spent)
        return CallbackRefused(reason, status)
    if action == SUCCEED and (clash := sorted(set(output) & set(task.SecretParameters))):
        # Judged once the token proved itself: to anyone else the task's parameters stay unnamed.
        # A secret is the submitter's (a password, a key): another system's answer may not swap it.
        return CallbackRefused(f"{clash[0]!r} is a secret parameter of the task: a callback's output may not "
                               "set it", 422, f"output.{clash[0]}")
    if found.State is RunState.RUNNING:  # its command has not answered yet
        if action == HEARTBEAT:
            return CallbackTaken(None, "running", found.Cursor, found.Attempt, found.Phase.label)  # its wait's clock starts at the park
        assert found.Callback is not None
        if found.Callback.Kept is not None:
            return CallbackRefused("this callback was answered already: kept until its command returns", 409)
    new = task.clone()
    run = new.run(found.DispatchId)
    assert run is not None and run.Callback is not None
    if action == HEARTBEAT:
        run.Callback.Beat = timing.now
        run.Deadline = wait_deadline(run.Callback, timing.now)
        return CallbackTaken(new, "waiting", run.Cursor, run.Attempt, run.Phase.label)
    answer = KeptAnswer(Action=action, Output=output, Message=message, Retryable=retryable, Time=timing.now)
    if run.State is RunState.RUNNING:
        run.Callback.Kept = answer
        record(new, timing.now, "callback_kept", run, actor="callback", message=f"{action}: {message}".rstrip(": "))
        return CallbackTaken(new, "kept", run.Cursor, run.Attempt, run.Phase.label)
    ended = "succeeded" if action == SUCCEED else "failed"
    spend(new, run, ended, timing.now)
    conclude(new, run, answer_result(answer), timing, actor="callback", ids=ids)
    return CallbackTaken(new, ended, found.Cursor, found.Attempt, found.Phase.label)
