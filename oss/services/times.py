"""Times as clients write them: ISO-8601 text or UNIX epoch seconds; baton keeps epoch floats."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

# The latest time ISO-8601 text can name (9999-12-31T23:59:59.999999-23:59); a larger number
# is a mistake. Earlier than 1970 is fine: such a start is simply due, such a filter open-ended.
LATEST = 253_402_387_200.0
EARLIEST = -62_135_683_200.0  # 0001-01-01T00:00:00+23:59, the earliest ISO-8601 text can name
# The JSON Schema of what to_epoch takes, for the OpenAPI document.
MOMENT_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": EARLIEST, "maximum": LATEST},
        {"type": "string", "format": "date-time"},
    ],
    "description": "ISO-8601 (no zone means UTC) or UNIX epoch seconds",
}


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
    if not math.isfinite(seconds) or not EARLIEST <= seconds <= LATEST:
        raise ValueError("must be a time between the years 1 and 9999")
    return seconds


# Epoch seconds as text: ASCII digits only (float() alone takes "١٢٣", "1_000" and "nan").
_NUMBER = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _parse_text(text: str) -> float:
    if not text.isascii():  # fromisoformat() takes other scripts' digits too
        raise ValueError("must be ISO-8601 (2030-01-31T12:00:00Z) or epoch seconds")
    if _NUMBER.fullmatch(text):
        return float(text)
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("must be ISO-8601 (2030-01-31T12:00:00Z) or epoch seconds") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    try:
        return moment.timestamp()
    except (OverflowError, OSError, ValueError):
        raise ValueError("must be a time between the years 1 and 9999") from None
