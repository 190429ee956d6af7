"""A command's "not done yet, check again in N seconds" (docs/design/operations.md), decided purely.

A command that waits for something outside baton (a replica catching up, a client disconnecting)
answers `{"_baton": {"check_again": seconds, "progress": "..."}}` instead of sleeping in its worker
slot. Its run then ends without counting an attempt, and a new run of the same unit and phase is
dispatched due `seconds` later (an outbox entry, like a retry's backoff): nothing is held meanwhile.
The unit keeps the latest `Progress` and `WaitingSince` (when this phase first answered so); the
step's `max_wait` bounds the total, past which the unit fails like a timeout.

`next_check` decides; common.engine.core.advance.conclude applies its answer.
"""

from __future__ import annotations

import math
from typing import Any

from common.engine.document import Run, Step, Task, UnitState
from common.engine.core.units import unit_state
from common.engine.states import Phase, ResultCode, TaskStatus
from common.engine.core.units import AttemptResult, record

ANSWER_KEY = "_baton"  # the reserved key of a command's output that holds the answer
MAX_CHECK_AGAIN = 86400.0  # one day: a longer wait is a schedule's job, not a step's
MAX_PROGRESS = 500  # characters of a progress message kept in the document


def check_again(seconds: float, progress: str = "") -> dict[str, Any]:
    """What a command returns to be asked again in `seconds` (its output is not merged)."""
    return {ANSWER_KEY: {"check_again": seconds, "progress": progress}}


def parse_answer(output: dict[str, Any]) -> tuple[float, str] | None | str:
    """(seconds, progress) when `output` is a check-again answer; None when it is plain output;
    a string naming the problem when the `_baton` key is malformed (a bug of the command)."""
    if ANSWER_KEY not in output:
        return None
    answer = output[ANSWER_KEY]
    if not isinstance(answer, dict) or set(answer) - {"check_again", "progress"} or "check_again" not in answer:
        return f"{ANSWER_KEY} must be {{\"check_again\": seconds, \"progress\": text}}"
    seconds, progress = answer["check_again"], answer.get("progress", "")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
            or not 0 < seconds <= MAX_CHECK_AGAIN:
        return f"{ANSWER_KEY}.check_again must be seconds, > 0 and <= {MAX_CHECK_AGAIN:g}"
    if not isinstance(progress, str):
        return f"{ANSWER_KEY}.progress must be text"
    if set(output) != {ANSWER_KEY}:
        return f"a check-again answer carries no output: {ANSWER_KEY} must be the only key"
    return float(seconds), progress[:MAX_PROGRESS]


def next_check(task: Task, run: Run, result: AttemptResult, now: float, actor: str) -> float | AttemptResult:
    """When to dispatch the unit's next check (the caller removes `run` and dispatches at that
    time), or the result to conclude the run with instead: the wait went past `max_wait`, or the
    task stopped going forward (a cancel, another unit failed) so this unit gets no new run."""
    verdict = decide_check(task, task.Steps[run.Cursor], unit_state(task, run.unit), run, result, now)
    if isinstance(verdict, float):
        record(task, now, "check_again", run, actor=actor, message=check_message(verdict, now, result))
    return verdict


def decide_check(task: Task, step: Step, state: UnitState, run: Run, result: AttemptResult,
                 now: float) -> float | AttemptResult:
    """`next_check`'s decision for a unit wherever it lives (the task, or an item record): it
    notes the progress on `state` and records nothing."""
    assert result.check_again is not None
    state.Progress = result.message
    if state.WaitingSince is None:
        state.WaitingSince = now
    stopping = run.Phase is Phase.NORMAL and (
        task.CancelRequested is not None or task.TaskStatus is TaskStatus.ROLLING_BACK
    )
    if stopping:
        # It may have started something (that is why it checks): rolled back like a drained unit.
        return AttemptResult(ResultCode.FAILED, f"stopped while waiting: {result.message}", retryable=False)
    due = now + result.check_again
    if step.MaxWait is not None:
        limit = state.WaitingSince + step.MaxWait
        if now >= limit:
            return AttemptResult(
                ResultCode.TIMED_OUT, f"not done after max_wait {step.MaxWait:g}s: {result.message}", retryable=False
            )
        due = min(due, limit)  # the last check comes at the limit, not past it
    return due


def note_verdict(state: UnitState, phase: Phase, result: AttemptResult) -> str | None:
    """A verify ran before this attempt (docs/design/runtime.md, "Verifying an unknown outcome"):
    count an unknown on its phase, and answer the `verified` history event's message (None: no
    verify ran)."""
    if result.verified is None:
        return None
    verdict, reason = result.verified
    if verdict == "unknown":
        if phase is Phase.NORMAL:
            state.Verifies += 1
        else:
            state.RollbackVerifies += 1
    return f"{verdict}: {reason}" if reason else verdict


def check_message(due: float, now: float, result: AttemptResult) -> str:
    return f"in {due - now:g}s" + (f": {result.message}" if result.message else "")
