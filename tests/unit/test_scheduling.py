"""When a schedule's ticks fall and which of them run: the pure part of schedules."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from common.scheduling import (
    MAX_CATCH_UP,
    Missed,
    Overlap,
    OverlapDecision,
    Schedule,
    ScheduleError,
    check_timing,
    next_tick_after,
    overlap_decision,
    plan_ticks,
    tick_key,
)

T0 = 1_800_000_000.0  # a round number of seconds, not a round minute


def interval(seconds: float, next_at: float | None = None, missed: Missed = Missed.LATEST) -> Schedule:
    return Schedule(ScheduleId="s1", Name="s", TaskType="demo", IntervalSeconds=seconds, TimeCreate=T0,
                    NextAt=T0 + seconds if next_at is None else next_at, Missed=missed)  # fmt: skip


def cron(expression: str, zone: str = "UTC", next_at: float = T0) -> Schedule:
    return Schedule(ScheduleId="s1", Name="s", TaskType="demo", Cron=expression, Timezone=zone,
                    TimeCreate=T0, NextAt=next_at)  # fmt: skip


def epoch(*args: int, zone: str = "UTC") -> float:
    return datetime(*args, tzinfo=ZoneInfo(zone)).timestamp()


def test_interval_ticks_are_anchored_at_creation_and_strictly_after() -> None:
    s = interval(10)
    assert next_tick_after(s, T0) == T0 + 10
    assert next_tick_after(s, T0 + 10) == T0 + 20  # strictly after an exact tick
    assert next_tick_after(s, T0 + 10.5) == T0 + 20
    assert next_tick_after(s, T0 - 100) == T0 + 10  # never before the first tick


def test_cron_ticks_follow_the_time_zone_across_a_daylight_saving_change() -> None:
    s = cron("30 2 * * *", zone="America/New_York")
    # 2:30 does not exist on 2026-03-08 in New York: that day's tick is at the next valid time,
    # and the day after is 2:30 local again (an hour less from UTC).
    first = next_tick_after(s, epoch(2026, 3, 8, 0, 0, zone="America/New_York"))
    assert datetime.fromtimestamp(first, ZoneInfo("America/New_York")).strftime("%m-%d %H:%M") == "03-08 03:00"
    second = next_tick_after(s, first)
    assert datetime.fromtimestamp(second, ZoneInfo("America/New_York")).strftime("%m-%d %H:%M") == "03-09 02:30"


def test_on_time_ticks_all_run_even_several_in_one_round() -> None:
    s = interval(1, next_at=T0 + 1)
    plan = plan_ticks(s, now=T0 + 3.2, grace=60)
    assert plan.fire == (T0 + 1, T0 + 2, T0 + 3)
    assert plan.dropped == 0
    assert plan.next_at == T0 + 4


def test_nothing_due_changes_nothing() -> None:
    s = interval(10)
    plan = plan_ticks(s, now=T0 + 5, grace=60)
    assert plan.fire == () and plan.dropped == 0 and plan.next_at == s.NextAt


@pytest.mark.parametrize(
    ("missed", "fire", "dropped"),
    [
        (Missed.LATEST, (T0 + 50,), 4),  # the newest missed tick runs once
        (Missed.SKIP, (), 5),
        (Missed.ALL, (T0 + 10, T0 + 20, T0 + 30, T0 + 40, T0 + 50), 0),
    ],
)
def test_missed_ticks_follow_the_policy(missed: Missed, fire: tuple[float, ...], dropped: int) -> None:
    s = interval(10, missed=missed)
    plan = plan_ticks(s, now=T0 + 55, grace=1)  # ticks 10..50 are all late; none is on time
    assert plan.fire == fire
    assert plan.dropped == dropped
    assert plan.next_at == T0 + 60


def test_latest_policy_runs_no_late_tick_when_an_on_time_one_exists() -> None:
    s = interval(10)
    plan = plan_ticks(s, now=T0 + 125, grace=30)  # 10..90 late, 100..120 on time
    assert plan.fire == (T0 + 100, T0 + 110, T0 + 120)
    assert plan.dropped == 9


def test_catch_up_is_bounded_after_a_long_outage() -> None:
    s = interval(1, missed=Missed.ALL)
    plan = plan_ticks(s, now=T0 + 1_000_000, grace=0)
    assert len(plan.fire) == MAX_CATCH_UP + 1  # the newest 100 missed, and the one on time
    assert plan.fire[-1] == T0 + 1_000_000  # the newest kept, the oldest dropped
    assert plan.dropped + len(plan.fire) == 1_000_000
    assert plan.next_at == T0 + 1_000_001


def test_cron_catch_up_counts_every_missed_tick() -> None:
    s = cron("* * * * *", next_at=epoch(2026, 1, 1, 0, 0))
    plan = plan_ticks(s, now=epoch(2026, 1, 2, 0, 0) + 1, grace=0)  # one day: 1441 ticks
    assert plan.fire == (epoch(2026, 1, 2, 0, 0),)
    assert plan.dropped == 1440


@pytest.mark.parametrize(
    ("overlap", "running", "decision"),
    [
        (Overlap.SKIP, True, OverlapDecision.SKIP),
        (Overlap.QUEUE, True, OverlapDecision.WAIT),
        (Overlap.ALLOW, True, OverlapDecision.FIRE),
        (Overlap.SKIP, False, OverlapDecision.FIRE),
        (Overlap.QUEUE, False, OverlapDecision.FIRE),
    ],
)
def test_overlap_policy(overlap: Overlap, running: bool, decision: OverlapDecision) -> None:
    assert overlap_decision(overlap, running) is decision


def test_tick_key_names_the_schedule_and_the_tick() -> None:
    assert tick_key("abc", 1_800_000_000.25) == "schedule:abc:1800000000250"
    assert tick_key("abc", 1.0) != tick_key("abd", 1.0)


@pytest.mark.parametrize(
    ("cron_text", "every", "zone", "field"),
    [
        (None, None, "UTC", "exactly one"),
        ("* * * * *", 5.0, "UTC", "exactly one"),
        ("61 * * * *", None, "UTC", "cron:"),
        ("* * * * *", None, "Mars/Olympus", "timezone:"),
        (None, 0.5, "UTC", "interval_seconds:"),
        (None, float("nan"), "UTC", "interval_seconds:"),
    ],
)
def test_bad_timing_names_the_field(cron_text: str | None, every: float | None, zone: str, field: str) -> None:
    with pytest.raises(ScheduleError, match=field):
        check_timing(cron_text, every, zone)


def test_good_timing_passes() -> None:
    check_timing("*/5 * * * 1-5", None, "Europe/Paris")
    check_timing(None, 1.0, "UTC")
