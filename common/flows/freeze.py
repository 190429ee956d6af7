"""Freeze windows (flows.yaml `freeze:`): when new tasks of some types are held or refused.

A window opens at each tick of its cron expression (five-field cron, in its time zone, evaluated
by the same library and checked by the same expression as schedules: common.cron) and stays
open for `duration`. A window longer than the time between two of its openings would overlap
its own next opening and never close (a task waiting "until" years away): flows.yaml refuses it
(`self_overlap`). Ticks whose windows overlap (a window written before that check) make one
freeze: it ends when the last of them does. Pure: the clock is an argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from zoneinfo import ZoneInfo

from cronsim import CronSim

from common.spec.durations import DURATION, DURATION_PROBLEM, MAX_DURATION_SECONDS, parse_duration  # noqa: F401  (flows' names)

# Overlapping windows chain into one freeze: past this many chained ticks (a window as long as
# its cron's period or longer never closes) the freeze is taken to end after the last one counted.
MAX_CHAINED_TICKS = 1000
# How far `self_overlap` looks for two openings closer than the duration: past a leap year's
# February (a yearly cron's gaps are 365 and 366 days), at most this many ticks (a cron's
# shortest gap shows within a day or a month of ticks).
OVERLAP_HORIZON_SECONDS = 4 * 366 * 86400.0
OVERLAP_MAX_TICKS = 2000


class FreezePolicy(StrEnum):
    WAIT = "wait"  # the task is created, and starts once the window ended
    REFUSE = "refuse"  # the submission is refused; nothing is written


@dataclass(frozen=True)
class FreezeWindow:
    name: str
    cron: str
    duration: float  # seconds
    task_types: tuple[str, ...]
    policy: FreezePolicy
    timezone: str = "UTC"


@dataclass(frozen=True)
class OpenFreeze:
    """A window open now, and when the freeze it belongs to ends."""

    window: FreezeWindow
    until: float


def open_freeze(window: FreezeWindow, now: float) -> OpenFreeze | None:
    """The freeze of `window` open at `now`, or None. The newest tick at or before `now` opened
    the latest window; if that one is closed, every earlier one is too (same duration)."""
    zone = ZoneInfo(window.timezone)
    # cronsim walks strictly before its start: from a second later, a tick at `now` itself counts.
    latest = next((t for t in _ticks(window, datetime.fromtimestamp(now + 1, zone), reverse=True) if t <= now), None)
    if latest is None or latest + window.duration <= now:
        return None
    return OpenFreeze(window, _freeze_end(window, latest))


@lru_cache(maxsize=256)
def _freeze_end(window: FreezeWindow, opened: float) -> float:
    """When the freeze opened at `opened` ends, overlapping windows chained. Cached: the same
    for every submission until the next tick, and a long chain walks up to 1000 ticks."""
    until = opened + window.duration
    following = _ticks(window, datetime.fromtimestamp(opened, ZoneInfo(window.timezone)), reverse=False)
    for _ in range(MAX_CHAINED_TICKS):
        tick = next(following, None)
        if tick is None or tick >= until:
            break
        until = max(until, tick + window.duration)
    return until


def self_overlap(window: FreezeWindow, now: float) -> tuple[float, float] | None:
    """The first two openings of `window` after `now` that are closer than its duration (it would
    still be open at the second), or None when no opening overlaps the next."""
    previous = None
    ticks = _ticks(window, datetime.fromtimestamp(now, ZoneInfo(window.timezone)), reverse=False)
    for _, tick in zip(range(OVERLAP_MAX_TICKS), ticks):
        if tick > now + OVERLAP_HORIZON_SECONDS:
            break
        if previous is not None and tick - previous < window.duration:
            return previous, tick
        previous = tick
    return None


def _ticks(window: FreezeWindow, start: datetime, *, reverse: bool):
    return (tick.timestamp() for tick in CronSim(window.cron, start, reverse=reverse))


def freeze_for(windows: tuple[FreezeWindow, ...], task_type: str, now: float) -> OpenFreeze | None:
    """What holds a new task of `task_type` now: an open refusing window first (nothing may be
    created), else the waiting one that ends last, else None."""
    found = [f for w in windows if task_type in w.task_types and (f := open_freeze(w, now)) is not None]
    refusing = [f for f in found if f.window.policy is FreezePolicy.REFUSE]
    if refusing:
        return max(refusing, key=lambda f: f.until)
    return max(found, key=lambda f: f.until, default=None)
