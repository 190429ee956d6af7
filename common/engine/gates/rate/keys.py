"""A `rate:` block of flows.yaml (a task type's, a step's): its keys, their types and bounds
(docs/design/rates.md). The schema reports a wrong one with its line."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, StringConstraints, field_validator

from common.spec.keys import Spec
from common.spec.problems import describe

MAX_RATE_LIMIT = 10_000  # a key's document keeps at most this many start times
MAX_RATE_WINDOW_SECONDS = 86_400.0
_RATE_WINDOW = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def rate_window_seconds(value: object) -> float | None:
    """Seconds of a rate's `per`: a number, or a text like "60s", "1m", "1h30m"; None when it is
    neither, not > 0, or more than a day."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and value.strip() and (found := _RATE_WINDOW.fullmatch(value.strip())):
        hours, minutes, secs = (int(part or 0) for part in found.groups())
        seconds = float(hours * 3600 + minutes * 60 + secs)
    else:
        return None
    return seconds if 0 < seconds <= MAX_RATE_WINDOW_SECONDS else None


class RateSpec(Spec):
    """At most `limit` tasks whose rendered `key` is the same start in any `per` seconds; the rest
    wait for a slot (docs/design/rates.md). The key is checked as a lock's."""

    key: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    limit: Annotated[int, Field(ge=1, le=MAX_RATE_LIMIT)]
    per: float | str

    @field_validator("per")
    @classmethod
    def _window(cls, value: float | str) -> float | str:
        if rate_window_seconds(value) is None:
            raise ValueError("must be seconds or a duration like 60s, 1m or 1h30m, more than 0 and at most a day"
                             f" (got {describe(value)})")
        return value

    @property
    def seconds(self) -> float:
        return rate_window_seconds(self.per) or 0.0
