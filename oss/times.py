"""Times as clients write them: ISO-8601 text or UNIX epoch seconds; baton keeps epoch floats."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

LATEST = 253_402_300_799.0  # 9999-12-31T23:59:59Z: anything later is a mistake


def to_epoch(value: Any) -> float:
    """Epoch seconds from a number or ISO-8601 text (no zone: UTC). ValueError says what's wrong
    without quoting the value."""
    if isinstance(value, bool):
        raise ValueError("must be ISO-8601 text or epoch seconds")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _parse_text(value.strip())
    else:
        raise ValueError("must be ISO-8601 text or epoch seconds")
    if not math.isfinite(seconds) or not 0 <= seconds <= LATEST:
        raise ValueError("must be a time between 1970 and 9999")
    return seconds


def _parse_text(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("must be ISO-8601 (2030-01-31T12:00:00Z) or epoch seconds") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    try:
        return moment.timestamp()
    except (OverflowError, OSError, ValueError):
        raise ValueError("must be a time between 1970 and 9999") from None
