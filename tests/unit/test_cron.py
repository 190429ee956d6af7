"""common/cron.py: the published cron pattern takes exactly what the scheduler can run."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from cronsim import CronSim, CronSimError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.cron import cron_pattern, is_cron
from common.scheduling import check_timing


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
@given(st.from_regex(re.compile(f"(?:{cron_pattern()})"), fullmatch=True))
def test_every_cron_the_pattern_allows_is_one_the_scheduler_can_run(cron: str) -> None:
    check_timing(cron, None, "UTC")  # raises for anything refused
    CronSim(cron, datetime.now(UTC))


# Standard cron's pieces, a few past a field's range, backwards, or a day some months lack.
PIECES = ["*", "*/7", "*/0", "0", "5", "7", "12", "29", "30", "31", "60", "2", "4", "1-5", "5-3", "30-31", "2-4/2",
          "4-6/2", "9-11/2", "0,30", "31,30"]  # fmt: skip


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
@given(st.lists(st.sampled_from(PIECES), min_size=5, max_size=5))
def test_the_pattern_takes_exactly_what_the_scheduler_can_run(fields: list[str]) -> None:
    cron = " ".join(fields)
    try:
        CronSim(cron, datetime.now(UTC))
        runs = True
    except CronSimError:
        runs = False
    assert is_cron(cron) == runs, cron
