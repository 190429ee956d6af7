"""What a callback leaves in the task document: on the command's run, the token's hash and its
wait (`Run.Callback`); on the step, the tokens spent (`Steps[].Callbacks`), so a late or
repeated callback is told why it is refused. Both are left out while empty: a task that waits
for no callback is written as before."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from common.engine.core.doc_base import Doc

SUCCEED, FAIL, HEARTBEAT = "succeed", "fail", "heartbeat"
Action = Literal["succeed", "fail", "heartbeat"]
# How a token's wait ended: answered (a repeat is a conflict, 409), or over (410).
Ended = Literal["succeeded", "failed", "timed_out", "ended"]
ANSWERED: frozenset[str] = frozenset({"succeeded", "failed"})
MAX_SPENT = 20  # spent tokens a step keeps (the oldest go first)


class KeptAnswer(Doc):
    """A success or failure that came while the command still ran: applied once it parks."""

    Action: Literal["succeed", "fail"]
    Output: dict[str, Any] = Field(default_factory=dict)
    Message: str = ""
    Retryable: bool = True
    Time: float


class CallbackWait(Doc):
    """A run's callback: the token's hash from the moment the command asked for it; the wait's
    bounds from the moment it parked."""

    Hash: str  # SHA-256 (hex) of the whole token: the token itself is never stored
    Until: float | None = None  # when the wait times out (set when it parks)
    Heartbeat: float | None = None  # the longest gap allowed between heartbeats (seconds)
    Beat: float | None = None  # the last heartbeat
    Kept: KeptAnswer | None = Field(None, exclude_if=lambda kept: kept is None)


class SpentToken(Doc):
    """A token whose wait is over, and how it ended."""

    Hash: str
    Attempt: int
    Ended: Ended
    Time: float


class CallbackRunFields(Doc):
    """A run's part: its command's callback token (its hash) and, once parked, the wait."""

    Callback: CallbackWait | None = Field(None, exclude_if=lambda wait: wait is None)


class CallbackStepFields(Doc):
    """A step's part: the callback tokens of its runs whose wait is over, and how it ended, so a
    late or repeated callback is told why it changes nothing. State, not definition; left out
    while empty."""

    STATE: ClassVar[frozenset[str]] = frozenset({"Callbacks"})

    Callbacks: list[SpentToken] = Field(default_factory=list, exclude_if=lambda spent: not spent)


STEP_PART = CallbackStepFields  # composed into the command kind's fields (command/fields.py)
RUN_PART = CallbackRunFields  # composed into the command kind's part of a run (command/fields.py)
