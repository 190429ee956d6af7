"""Schedules: periodic tasks, and the pure decisions of when a tick fires.

A schedule creates a task of one type, with fixed parameters, at every tick of a cron expression
(in a time zone) or of a fixed interval. The sweeper runs due schedules under its lease-lock
(common/relay/schedule_runner.py); the task of a tick is created with the idempotency key
`schedule:<id>:<tick>`, so a tick creates one task even if two sweepers race for it.

Two policies, both documented in docs/guide/schedules.md:
- **overlap**: what a tick does while the previous task of the schedule has not ended.
  `skip` (the default) drops the tick; `queue` holds it until the previous task ends, then runs
  it (later ticks due meanwhile are judged by the missed policy); `allow` runs it anyway.
- **missed**: what happens to ticks more than the misfire grace late (the sweepers were down).
  `latest` (the default) runs the newest of them once; `skip` runs none; `all` runs each, up to
  MAX_CATCH_UP of them (the oldest beyond are dropped and counted).
A tick that is late by less than the grace is not missed: it runs, as any on-time tick.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from common.cron import CRON_PROBLEM, is_cron
from common.reserved import TICK_KEY_PREFIX
from pydantic import BaseModel, ConfigDict, Field

from common.schedule_policies import Missed, Overlap

MAX_CATCH_UP = 100  # as Kubernetes CronJobs: past this many missed ticks, the oldest are dropped
MIN_INTERVAL_SECONDS = 1.0
MAX_INTERVAL_SECONDS = 366 * 86400.0



class Schedule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ScheduleId: str
    Name: str  # unique, chosen by the user
    TaskType: str
    Parameters: dict[str, Any] = Field(default_factory=dict)
    Cron: str | None = None  # five fields, minute resolution, in Timezone
    IntervalSeconds: float | None = None  # ticks at TimeCreate + k * IntervalSeconds
    Timezone: str = "UTC"
    Overlap: Overlap = Overlap.SKIP
    Missed: Missed = Missed.LATEST
    Priority: int = 0
    Labels: dict[str, str] = Field(default_factory=dict)
    Paused: bool = False
    NextAt: float  # the earliest tick not yet handled
    LastTickAt: float | None = None  # the last tick that created a task
    LastTaskId: str | None = None
    Fired: int = 0  # ticks that created a task
    Skipped: int = 0  # ticks dropped by the overlap or missed policy
    LastError: str = ""  # why the last tick could not create its task (type gone, parameters refused)
    CreatedBy: str | None = None
    TimeCreate: float
    Version: int = 0


class ScheduleError(ValueError):
    """A schedule definition that cannot work: which field, and why."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


def check_timing(cron: str | None, interval: float | None, timezone: str) -> None:
    if (cron is None) == (interval is None):
        raise ScheduleError("cron", "give exactly one of cron and interval_seconds")
    # The messages name the field, never the value: a refused value is not echoed back.
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError, OSError) as e:  # OSError: a name with NUL in it
        raise ScheduleError("timezone", "is not a known time zone (IANA name, e.g. Europe/Paris)") from e
    if cron is not None:
        if not is_cron(cron):
            raise ScheduleError("cron", CRON_PROBLEM)
        try:
            CronSim(cron, datetime.now(zone))
        except CronSimError as e:  # cannot happen for a cron is_cron takes: the two agree
            raise ScheduleError("cron", CRON_PROBLEM) from e
    elif isinstance(interval, bool) or not isinstance(interval, (int, float)):
        raise ScheduleError("interval_seconds", "must be a number of seconds")
    elif not (math.isfinite(interval) and MIN_INTERVAL_SECONDS <= interval <= MAX_INTERVAL_SECONDS):
        raise ScheduleError("interval_seconds", f"must be {MIN_INTERVAL_SECONDS:g} to {MAX_INTERVAL_SECONDS:g} seconds")


def next_tick_after(schedule: Schedule, moment: float) -> float:
    """The first tick strictly after `moment`."""
    if schedule.IntervalSeconds is not None:
        step = schedule.IntervalSeconds
        count = math.floor((moment - schedule.TimeCreate) / step) + 1
        tick = schedule.TimeCreate + max(count, 1) * step
        return tick if tick > moment else tick + step  # float rounding at an exact boundary
    zone = ZoneInfo(schedule.Timezone)
    return next(CronSim(schedule.Cron, datetime.fromtimestamp(moment, zone))).timestamp()  # type: ignore[arg-type]


@dataclass(frozen=True)
class TickPlan:
    fire: tuple[float, ...]  # ticks to run, oldest first
    dropped: int  # missed ticks the policy does not run
    next_at: float  # the first tick after everything planned here


def plan_ticks(schedule: Schedule, now: float, grace: float) -> TickPlan:
    """Which of the ticks due by `now` (from NextAt on) run, under the missed policy."""
    due, dropped, next_at = _due_ticks(schedule, now)
    late = [t for t in due if t < now - grace]
    on_time = due[len(late):]
    if schedule.Missed is Missed.ALL:
        kept_late = late[-MAX_CATCH_UP:]
    elif schedule.Missed is Missed.LATEST and not on_time:
        kept_late = late[-1:]
    else:
        kept_late = []
    dropped += len(late) - len(kept_late)
    return TickPlan(tuple(kept_late + on_time), dropped, next_at)


def _due_ticks(schedule: Schedule, now: float) -> tuple[list[float], int, float]:
    """The newest MAX_CATCH_UP + 1 ticks due by `now` (oldest first), how many older ticks were
    due too, and the first tick after `now`. Work is bounded for interval schedules; a cron
    schedule walks its ticks (a minute-resolution cron walks 100,000 ticks in well under 1 s)."""
    window: deque[float] = deque(maxlen=MAX_CATCH_UP + 1)
    if schedule.NextAt > now:
        return [], 0, schedule.NextAt
    if schedule.IntervalSeconds is not None:
        step = schedule.IntervalSeconds
        count = math.floor((now - schedule.NextAt) / step) + 1
        older = max(0, count - window.maxlen)  # type: ignore[operator]
        window.extend(schedule.NextAt + i * step for i in range(older, count))
        return list(window), older, next_tick_after(schedule, window[-1])
    zone = ZoneInfo(schedule.Timezone)
    ticks = CronSim(schedule.Cron, datetime.fromtimestamp(schedule.NextAt, zone))  # type: ignore[arg-type]
    tick, count = schedule.NextAt, 0
    while tick <= now:
        window.append(tick)
        count += 1
        tick = next(ticks).timestamp()
    return list(window), count - len(window), tick


class OverlapDecision(StrEnum):
    FIRE = "fire"
    SKIP = "skip"
    WAIT = "wait"


def overlap_decision(overlap: Overlap, previous_running: bool) -> OverlapDecision:
    if not previous_running or overlap is Overlap.ALLOW:
        return OverlapDecision.FIRE
    return OverlapDecision.SKIP if overlap is Overlap.SKIP else OverlapDecision.WAIT


def tick_key(schedule_id: str, tick: float) -> str:
    """The idempotency key of a tick's task: one task per tick, whoever creates it."""
    return f"{TICK_KEY_PREFIX}{schedule_id}:{round(tick * 1000)}"
