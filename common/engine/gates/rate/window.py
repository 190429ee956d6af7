"""Taking a slot of a key's rate (docs/design/rates.md, "Window semantics"): a sliding window over
the start times recorded in the key's document. Pure: common.store.gates.rate.table reads the document,
applies `take` and writes it back by compare-and-set on `Version`, re-deciding on a lost race, so
each decision sees every slot written before it and no window of `per` seconds ever holds more than
`limit` starts, whichever processes take them.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.engine.gates.rate.documents import KeyRate, RateStart


@dataclass(frozen=True)
class Taken:
    at: float  # the slot's time: the task's start, for its rate


@dataclass(frozen=True)
class Full:
    next_at: float  # when the oldest start that must leave the window leaves it


def member_of(task_id: str, generation: int) -> str:
    """The table's member for a task's generation: a retried task asks again, as a new member."""
    return f"{task_id}:g{generation}"


def take(rate: KeyRate, member: str, limit: int, per: float, now: float) -> tuple[KeyRate, Taken | Full]:
    """A slot for `member`, or when the next one frees. Idempotent: a member that holds a slot
    gets it back and takes no second one (a relay's repeat after a crash). The newest declared
    limit and window win, as a lock's limit does (an edited flows.yaml takes effect as tasks ask)."""
    own = next((s for s in rate.Starts if s.Member == member), None)
    if own is not None:
        return rate, Taken(own.At)
    newest = rate.Starts[-1].At if rate.Starts else now
    at = max(now, newest)  # the stored times never go back, whoever's clock is behind
    recent = [s for s in rate.Starts if s.At > at - per]
    if len(recent) >= limit:
        return rate, Full(recent[len(recent) - limit].At + per)
    # A shallow copy: the starts kept are never changed, only dropped (nothing older can count again).
    new = rate.model_copy(update={"Limit": limit, "Per": per, "Starts": [*recent, RateStart(Member=member, At=at)]})
    return new, Taken(at)


def slots_left(rate: KeyRate | None, limit: int, per: float, now: float) -> tuple[int, float | None]:
    """For a plan: how many slots are free at `now`, and when the next frees if none is."""
    if rate is None:
        return limit, None
    recent = [s for s in rate.Starts if s.At > now - per]
    if len(recent) < limit:
        return limit - len(recent), None
    return 0, recent[len(recent) - limit].At + per
