"""Every backoff in baton: exponential, capped, and (for step retries) with jitter, as pure
functions of the retry number (and a random draw)."""

from __future__ import annotations

from typing import Protocol


class BackoffPolicy(Protocol):
    """What a retry's delay is drawn from (a step phase's `BackoffPolicy` in the task document)."""

    Initial: float
    Max: float
    Multiplier: float
    Jitter: float


def exponential(first: float, steps: int, cap: float, multiplier: float = 2) -> float:
    """`first` multiplied `steps` times by `multiplier`, at most `cap`: a step's retries, a
    webhook receiver's, an unclaimed message's redispatch."""
    return min(cap, first * multiplier**steps)


def retry_delay(policy: BackoffPolicy, retry_number: int, unit_random: float) -> float:
    """Seconds to wait before retry `retry_number` (1 = first retry).

    `unit_random` is a draw from [0, 1): the caller owns the randomness so tests need no seeds.
    Jitter spreads retries of many tasks that failed together (a broker or database restart)
    so they do not all come back in the same instant.
    """
    if retry_number < 1:
        raise ValueError("retry_number starts at 1")
    base = exponential(policy.Initial, retry_number - 1, policy.Max, policy.Multiplier)
    spread = base * policy.Jitter
    return max(0.0, base - spread + 2 * spread * unit_random)
