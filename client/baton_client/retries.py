"""When to send a request again, and after how long: pure decisions, the clients sleep.

A request is sent again after a failure only when repeating it cannot do twice what it asks:
- the connection could not be made (the request never left): always;
- the server answered 503 (its store or broker is down for a moment), or the connection broke
  after the request was sent: only for a call that is safe to repeat (a read, a dry run, a
  submission with an idempotency key, an acknowledgement). Any other call raises at once.
Delays grow exponentially from `initial`, capped at `max_delay`, each spread by +-`jitter` of
itself so that many clients cut off together do not come back together.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Failure(enum.Enum):
    NOT_SENT = "the connection could not be made"
    ANSWER_LOST = "the connection broke after the request was sent"
    UNAVAILABLE = "the server answered 503"


@dataclass(frozen=True)
class RetryPolicy:
    """`attempts`: how many times a call is sent in all, the first included (1: never again)."""

    attempts: int = 6
    initial: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 8.0
    jitter: float = 0.25

    def __post_init__(self) -> None:
        problems = [
            f"{name} is {value!r}: {rule}"
            for name, value, ok, rule in (
                ("attempts", self.attempts, isinstance(self.attempts, int) and self.attempts >= 1, "at least 1"),
                ("initial", self.initial, self.initial >= 0, "0 or more seconds"),
                ("multiplier", self.multiplier, self.multiplier >= 1, "1 or more"),
                ("max_delay", self.max_delay, self.max_delay >= self.initial, "at least `initial`"),
                ("jitter", self.jitter, 0 <= self.jitter < 1, "from 0 to less than 1"),
            )
            if not ok
        ]
        if problems:
            raise ValueError("RetryPolicy: " + "; ".join(problems))

    def delay(self, retry: int, spread: float) -> float:
        """Seconds before retry number `retry` (1 for the second attempt). `spread` is a draw in
        [0, 1) (random.random()): 0.5 gives the delay unspread."""
        base = min(self.max_delay, self.initial * self.multiplier ** (retry - 1))
        return min(self.max_delay, base * (1 + self.jitter * (2 * spread - 1)))


NO_RETRY = RetryPolicy(attempts=1)


def retry_delay(policy: RetryPolicy, attempt: int, failure: Failure, safe: bool, spread: float) -> float | None:
    """Seconds to wait before sending the call again after attempt number `attempt` failed so;
    None: give up and raise."""
    if attempt >= policy.attempts:
        return None
    if failure is not Failure.NOT_SENT and not safe:
        return None
    return policy.delay(attempt, spread)
