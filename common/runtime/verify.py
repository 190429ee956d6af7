"""Verifying an unknown outcome before a retry or a rollback (docs/design/runtime.md, "Verifying an
unknown outcome").

A command that timed out, lost its worker or died with its process may have acted or not. Its
verify companion looks at the world and answers a Verdict:

    @registry.verify("init_instance")
    def instance_exists(parameters, ctx) -> Verdict:
        row = lookup(parameters["name"])
        if row is None:
            return Verdict.not_done("no such instance")
        return Verdict.done({"instance": row}, "created under this step's key")

`verify_mode` says when a verify runs, `settle` what its verdict means: both pure. `run_first`
calls the verify in the command's own call (its kind, slot and timeout: common/runtime/invoke.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from common.engine.document import UnitState
from common.engine.states import Phase, ResultCode

DONE, NOT_DONE, UNKNOWN = "done", "not_done", "unknown"
# The codes after which nobody knows whether the command acted.
UNKNOWN_CODES = frozenset({ResultCode.TIMED_OUT, ResultCode.WORKER_LOST, ResultCode.PROCESS_DIED})
RETRY, ROLLBACK = "retry", "rollback"  # what the verify comes before
MAX_REASON = 500


@dataclass(frozen=True)
class Verdict:
    """What a verify found: `state` is done, not_done or unknown."""

    state: str
    reason: str = ""
    output: dict[str, Any] = field(default_factory=dict)  # done before a retry: the attempt's output

    @classmethod
    def done(cls, output: dict[str, Any] | None = None, reason: str = "") -> Verdict:
        return cls(DONE, reason, dict(output or {}))

    @classmethod
    def not_done(cls, reason: str = "") -> Verdict:
        return cls(NOT_DONE, reason)

    @classmethod
    def unknown(cls, reason: str) -> Verdict:
        return cls(UNKNOWN, reason)


VerifyFn = Callable[[Any, Any], Verdict]  # (parameters, ctx); an async command's may be an async def


@dataclass(frozen=True)
class VerifyPlan:
    """What the module asks of the call that runs the command: verify `command` first, before a
    `mode` (retry or rollback); `final`: an unknown now reaches the limit; `again`: the backoff
    of a check again."""

    mode: str
    command: str
    key: str  # the normal phase's idempotency key: the verify looks for what the command made
    final: bool
    again: float
    count: int  # unknown verdicts so far in this phase, for the messages
    limit: int


def verify_mode(unit: UnitState, phase: Phase, attempt: int) -> str | None:
    """Whether this attempt verifies first, and before what."""
    if phase is Phase.NORMAL:
        return RETRY if attempt >= 2 and unit.Code in UNKNOWN_CODES else None
    if attempt == 1 and (unit.Code in UNKNOWN_CODES or unit.Code is ResultCode.OUTCOME_UNKNOWN):
        return ROLLBACK
    return None


def plan_for(unit: UnitState, phase: Phase, attempt: int, command: str, key: str, limit: int,
             again: float) -> VerifyPlan | None:  # fmt: skip
    mode = verify_mode(unit, phase, attempt)
    if mode is None:
        return None
    count = unit.Verifies if phase is Phase.NORMAL else unit.RollbackVerifies
    return VerifyPlan(mode, command, key, final=count + 1 >= limit, again=max(again, 0.0), count=count, limit=limit)


def settle(plan: VerifyPlan, verdict: Verdict) -> dict[str, Any] | None:
    """The attempt's answer (invoke's Answer shape) for `verdict`, or None: run the command."""
    marks = {"verified": verdict.state, "verify_reason": verdict.reason}
    if plan.mode == RETRY and verdict.state == DONE:
        message = "verified done; not run again" + (f": {verdict.reason}" if verdict.reason else "")
        return {"ok": True, "message": message, "output": dict(verdict.output), "retryable": True, **marks}
    if plan.mode == ROLLBACK and verdict.state == NOT_DONE:
        message = "verified not done; nothing to roll back" + (f": {verdict.reason}" if verdict.reason else "")
        return {"ok": True, "message": message, "output": {}, "retryable": True, **marks}
    if verdict.state != UNKNOWN:
        return None
    tries = f"{plan.count + 1} of {plan.limit}"
    if plan.final:
        return {"ok": False, "message": f"outcome still unknown after {plan.limit} verifies: {verdict.reason}",
                "output": {}, "retryable": False, "code": int(ResultCode.OUTCOME_UNKNOWN), **marks}
    return {"ok": True, "message": f"outcome unknown (verify {tries}): {verdict.reason}", "output": {},
            "retryable": True, "check_again": plan.again, **marks}


def checked(verdict: Any) -> Verdict:
    """A verify's answer as a Verdict; anything else is a bug of the verify: unknown, said so."""
    if isinstance(verdict, Verdict) and verdict.state in (DONE, NOT_DONE, UNKNOWN):
        if not isinstance(verdict.output, dict):
            return Verdict.unknown(f"the verify's output is a {type(verdict.output).__name__}, not a dict")
        return replace(verdict, reason=str(verdict.reason)[:MAX_REASON])
    return Verdict.unknown(f"the verify answered {type(verdict).__name__}, not a Verdict")


def failed_verify(exc: Exception) -> Verdict:
    return Verdict.unknown(f"the verify raised {type(exc).__name__}: {exc}")


def verify_context(context: Any, plan: VerifyPlan) -> Any:
    """The command's context as its verify sees it: the normal command's name and key."""
    return replace(context, command=plan.command, idempotency_key=plan.key)


def run_first_sync(fn: VerifyFn, context: Any, plan: VerifyPlan) -> Verdict:
    try:
        return checked(fn(context.parameters, verify_context(context, plan)))
    except Exception as exc:  # a verify's bug is an unknown, never the module's crash
        return failed_verify(exc)


async def run_first_async(fn: VerifyFn, context: Any, plan: VerifyPlan) -> Verdict:
    try:
        answer = fn(context.parameters, verify_context(context, plan))
        if inspect.isawaitable(answer):
            answer = await answer
        return checked(answer)
    except Exception as exc:
        return failed_verify(exc)


def marked(answer: dict[str, Any], verdict: Verdict | None) -> dict[str, Any]:
    """The command's answer, carrying the verdict that let it run (for the history)."""
    if verdict is None:
        return answer
    return {**answer, "verified": verdict.state, "verify_reason": verdict.reason}
