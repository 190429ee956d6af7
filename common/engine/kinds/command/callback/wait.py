"""A command's wait for a callback, decided purely (docs/design/callbacks.md): the token's hash
on its run, the answer `await_callback` that parks the run, a kept early answer, the wait's
deadline and its lapse, the spent tokens.

Nothing here imports `advance`: `conclude` calls `park` where it handles "check again", and the
changes that conclude a run (`changes.py`) import `advance` themselves.
"""

from __future__ import annotations

import hmac
import math
from typing import Any

from common.engine.core.check_again import ANSWER_KEY
from common.engine.core.units import AttemptResult, Refusal, record, unit_state
from common.engine.document import Run, Task
from common.engine.kinds.command.callback.fields import (
    ANSWERED, FAIL, MAX_SPENT, SUCCEED, CallbackWait, Ended, KeptAnswer, SpentToken,
)
from common.engine.states import Phase, ResultCode, RunState, TaskStatus, move_run

AWAIT_KEY = "await_callback"
MAX_CALLBACK_WAIT = 30 * 86400.0  # 30 days: a longer wait is a person's job, not a step's


# --- the command's side ------------------------------------------------------------------------


def await_callback(timeout: float, heartbeat: float | None = None) -> dict[str, Any]:
    """What a command returns to wait, parked, for the callback of the token it gave out."""
    return {ANSWER_KEY: {AWAIT_KEY: {"timeout": timeout, "heartbeat": heartbeat}}}


def parse_await(output: dict[str, Any]) -> tuple[float, float | None] | None | str:
    """(timeout, heartbeat) when `output` is an await-callback answer; None when it is not one;
    a string naming the problem when it is malformed (a bug of the command)."""
    answer = output.get(ANSWER_KEY)
    if not isinstance(answer, dict) or AWAIT_KEY not in answer:
        return None
    asked = answer[AWAIT_KEY]
    if set(answer) != {AWAIT_KEY} or set(output) != {ANSWER_KEY}:
        return f"an await_callback answer carries no output: {ANSWER_KEY} must be its only key"
    if not isinstance(asked, dict) or set(asked) - {"timeout", "heartbeat"} or "timeout" not in asked:
        return f"{ANSWER_KEY}.{AWAIT_KEY} must be {{\"timeout\": seconds, \"heartbeat\": seconds}}"
    timeout, heartbeat = asked["timeout"], asked.get("heartbeat")
    if not _seconds(timeout, MAX_CALLBACK_WAIT):
        return f"{AWAIT_KEY} timeout must be seconds, > 0 and <= {MAX_CALLBACK_WAIT:g}"
    if heartbeat is not None and not _seconds(heartbeat, float(timeout)):
        return f"{AWAIT_KEY} heartbeat must be seconds, > 0 and <= its timeout"
    return float(timeout), None if heartbeat is None else float(heartbeat)


def _seconds(value: object, most: float) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) \
        and 0 < value <= most


def open_callback(task: Task, dispatch_id: str, owner: str, hashed: str) -> Task | Refusal:
    """The change of `ctx.callback_token()`: the token's hash on the command's run, fenced like
    any write of a claimed run. Refused for a run that is no longer this worker's, an item's
    run, or a run that has a token already."""
    run = task.run(dispatch_id)
    if run is None:
        return Refusal("stale dispatch: the task has moved on")
    if run.State is not RunState.RUNNING or run.Owner != owner:
        return Refusal(f"claim lost: run is {run.State.value}, owned by {run.Owner}")
    if run.Item is not None or task.Steps[run.Cursor].Kind != "command":
        return Refusal("only a command step's own run may wait for a callback, not an item's")
    if run.Callback is not None:
        return Refusal("this attempt has its callback token already")
    new = task.clone()
    found = new.run(dispatch_id)
    assert found is not None
    found.Callback = CallbackWait(Hash=hashed)
    return new


# --- the engine's side -------------------------------------------------------------------------


def park(task: Task, run: Run, result: AttemptResult, now: float, actor: str) -> AttemptResult | None:
    """In place: the command answered await_callback. None: the run is parked, waiting; else the
    outcome to conclude it with (no token was asked for, the task stops, or a callback came
    while the command ran)."""
    assert result.callback is not None
    timeout, heartbeat = result.callback
    wait = run.Callback
    if wait is None:
        return AttemptResult(ResultCode.FAILED, "await_callback without a token: call ctx.callback_token() "
                             "and give the token out first", retryable=False)
    if run.Phase is Phase.NORMAL and (task.CancelRequested is not None or task.TaskStatus is TaskStatus.ROLLING_BACK):
        spend(task, run, "ended", now)
        return AttemptResult(ResultCode.FAILED, "stopped while waiting for a callback", retryable=False)
    if wait.Kept is not None:
        return kept_outcome(task, run, now)
    move_run(run, RunState.PARKED)  # nobody holds it now: the callback, or its deadline, ends it
    run.Owner = None
    run.Since = now
    wait.Until, wait.Heartbeat = now + timeout, heartbeat
    run.Deadline = wait_deadline(wait, now)
    state = unit_state(task, run.unit)
    if state.WaitingSince is None:  # its command ran: a cancel or a failure elsewhere rolls it back
        state.WaitingSince = now
    record(task, now, "callback_waiting", run, actor=actor, message=describe(run))
    return None


def wait_deadline(wait: CallbackWait, now: float) -> float:
    """When the sweeper looks at the wait again: its timeout, or a missed heartbeat, first."""
    assert wait.Until is not None
    if wait.Heartbeat is None:
        return wait.Until
    return min(wait.Until, (wait.Beat or now) + wait.Heartbeat)


def kept_outcome(task: Task, run: Run, now: float) -> AttemptResult | None:
    """In place: the outcome a callback that came while the command ran gives its run (its token
    spent), or None: none came."""
    kept = run.Callback.Kept if run.Callback is not None else None
    if kept is None:
        return None
    spend(task, run, "succeeded" if kept.Action == SUCCEED else "failed", now)
    return answer_result(kept)


def answer_result(answer: KeptAnswer) -> AttemptResult:
    if answer.Action == SUCCEED:
        return AttemptResult(ResultCode.OK, answer.Message or "called back: succeeded", dict(answer.Output))
    return AttemptResult(ResultCode.FAILED, f"called back: {answer.Message or 'failed'}", retryable=answer.Retryable)


def lapse(task: Task, run: Run, now: float) -> AttemptResult:
    """In place: a parked callback's deadline passed: its timeout, or a missed heartbeat."""
    wait = run.Callback
    assert wait is not None and wait.Until is not None
    spend(task, run, "timed_out", now)
    if now >= wait.Until or wait.Heartbeat is None:
        said = f"no callback within {duration(wait.Until - (run.Since or wait.Until))}"
    else:
        said = f"no callback heartbeat for {duration(wait.Heartbeat)}"
    return AttemptResult(ResultCode.TIMED_OUT, said)


def describe(run: Run) -> str:
    """What a parked callback waits for, as `WaitingFor` shows it."""
    wait = run.Callback
    assert wait is not None
    beat = f" (heartbeat every {duration(wait.Heartbeat)})" if wait.Heartbeat is not None else ""
    within = f" within {duration(wait.Until - (run.Since or 0.0))}" if wait.Until is not None else ""
    return f"a callback{beat}{within}"


def spend(task: Task, run: Run, ended: Ended, now: float) -> None:
    """In place: the run's token is spent (kept on its step so a late callback learns why)."""
    if run.Callback is None:
        return
    step = task.Steps[run.Cursor]
    if any(s.Hash == run.Callback.Hash for s in step.Callbacks):
        return
    step.Callbacks = [*step.Callbacks, SpentToken(Hash=run.Callback.Hash, Attempt=run.Attempt, Ended=ended,
                                                   Time=now)][-MAX_SPENT:]


def waiting_run(task: Task, hashed: str) -> Run | None:
    """The run whose token hashes to `hashed` (compared in constant time), or None."""
    found = None
    for run in task.Runs:
        if run.Callback is not None and hmac.compare_digest(run.Callback.Hash, hashed):
            found = run
    return found


def spent_token(task: Task, hashed: str) -> SpentToken | None:
    found = None
    for step in task.Steps:
        for spent in step.Callbacks:
            if hmac.compare_digest(spent.Hash, hashed):
                found = spent
    return found


def spent_reason(spent: SpentToken) -> tuple[int, str]:
    """The HTTP status and the reason a callback for a spent token is refused."""
    if spent.Ended in ANSWERED:
        return 409, f"this callback was answered already: the step {spent.Ended}"
    why = {"timed_out": "it timed out", "ended": "its attempt ended without it"}[spent.Ended]
    return 410, f"this callback's wait is over: {why}"


def duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


__all__ = ["FAIL", "SUCCEED", "await_callback", "open_callback", "park", "parse_await"]
