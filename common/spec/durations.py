"""A duration as flows.yaml writes it: seconds, or a text like "64h", "1h30m", "90s", "2d"
(a freeze window's length, an approval's timeout)."""

from __future__ import annotations

import re

from common.spec.problems import describe

# "64h", "1h30m", "90s", "2d": whole numbers of days, hours, minutes and seconds, largest first.
DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
MAX_DURATION_SECONDS = 366 * 86400.0  # a year at most, as a schedule's interval
DURATION_PROBLEM = 'must be seconds (a number > 0) or a duration like "64h", "1h30m", "90s", "2d", at most 366 days'
_UNIT_SECONDS = (86400, 3600, 60, 1)


def parse_duration(value: object) -> float | None:
    """Seconds, from a number or a text like "64h"; None when it is neither, not > 0, or more
    than a year (a window's end is shown as a date, and walked by cron ticks)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and value and (found := DURATION.fullmatch(value.strip())):
        seconds = float(sum(int(part or 0) * unit for part, unit in zip(found.groups(), _UNIT_SECONDS)))
    else:
        return None
    return seconds if 0 < seconds <= MAX_DURATION_SECONDS else None


def checked_duration(value: float | str) -> float | str:
    """A field validator's check of a duration (kept as written: the flow's hash and its plan
    show what the operator wrote): the value, or ValueError saying what a duration is."""
    if parse_duration(value) is None:
        raise ValueError(f"{DURATION_PROBLEM} (got {describe(value)})")
    return value
