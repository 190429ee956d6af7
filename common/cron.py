"""The cron expressions a schedule takes, as one regular expression: standard five-field cron.

    minute hour day-of-month month day-of-week      (one space between fields)

Each field is a comma-separated list of `*`, `*/step`, `n`, `a-b` or `a-b/step`, numbers in
the field's range without leading zeros (minute 0-59, hour 0-23, day 1-31, month 1-12,
weekday 0-7, 0 and 7 both Sunday), a range never backwards (`a <= b`) and a step from 1 to the
field's size. No names (`MON`), no seconds field, no `L`, `W`, `#` or `?`.

The expression is also what the OpenAPI document publishes (`pattern`), so it must hold every
rule the cron library applies, the one across fields included: a day-of-month list whose
smallest day is 30 or 31, with a weekday field starting with `*`, must name a month that has
that day (`0 0 30 2 *` never fires, and is refused). It is built here rather than written out,
from the same table of ranges, so that the published pattern and the check cannot differ.
"""

from __future__ import annotations

import re
from functools import cache

# (first, last) of each field, in order.
MINUTE, HOUR, DAY, MONTH, WEEKDAY = (0, 59), (0, 23), (1, 31), (1, 12), (0, 7)
DAYS_IN_MONTH = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}


def _alt(options: list[str]) -> str:
    return "(?:" + "|".join(options) + ")"


def _digits(low: int, high: int) -> str:
    return str(low) if low == high else f"[{low}-{high}]"


def _number(first: int, last: int) -> str:
    """The numbers first..last (at most two digits), written without leading zeros."""
    parts = []
    for tens in range(max(first, 10) // 10, last // 10 + 1):
        low, high = max(first, tens * 10) % 10, min(last, tens * 10 + 9) % 10
        parts.append(f"{tens}{_digits(low, high)}")
    if first <= 9:
        parts.append(_digits(first, min(last, 9)))
    return _alt(parts)


def _step(field: tuple[int, int]) -> str:
    return "/" + _number(1, field[1] - field[0] + 1)


def _range(field: tuple[int, int], starts: range | None = None) -> str:
    """`a-b` with a <= b, a among `starts` (all of the field's by default)."""
    first, last = field
    return _alt([f"{a}-{_number(a, last)}" for a in (starts or range(first, last + 1))])


def _item(field: tuple[int, int]) -> str:
    return _alt([rf"\*(?:{_step(field)})?", _number(*field), _range(field) + f"(?:{_step(field)})?"])


def _list_with(item: str, needed: str) -> str:
    """A list of `item`s, at least one of them a `needed` (itself an item)."""
    return f"(?:{item},)*{needed}(?:,{item})*"


def _items_starting_at(day: int) -> str:
    """Day-of-month items whose smallest day is `day`."""
    return _alt([str(day), _range(DAY, range(day, day + 1)) + f"(?:{_step(DAY)})?"])


def _months_having(day: int) -> str:
    """A month list naming at least one month that has `day` (a small field: each range is
    written out with the steps that keep such a month in it)."""
    first, last = MONTH
    having = {m for m, days in DAYS_IN_MONTH.items() if days >= day}
    steps = range(1, last - first + 2)
    items = [rf"\*(?:{_step(MONTH)})?"]  # they name January, which has every day
    items += [str(a) for a in sorted(having)]
    for a in range(first, last + 1):
        for b in range(a, last + 1):
            kept = [s for s in steps if having & set(range(a, b + 1, s))]
            if kept:
                shown = _step(MONTH) if len(kept) == len(steps) else "/" + _alt([str(s) for s in reversed(kept)])
                items.append(f"{a}-{b}(?:{shown})?")
    return _list_with(_item(MONTH), _alt(items))


@cache
def cron_pattern() -> str:
    """The whole expression, unanchored (the schema anchors it with ^ and $)."""
    day, month, weekday = _item(DAY), _item(MONTH), _item(WEEKDAY)
    low_day = _alt([rf"\*(?:{_step(DAY)})?", _number(1, 29), _range(DAY, range(1, 30)) + f"(?:{_step(DAY)})?"])
    from_30, from_31 = _items_starting_at(30), _items_starting_at(31)
    days_from_30 = _list_with(_alt([from_30, from_31]), from_30)
    days_from_31 = _list_with(from_31, from_31)
    any_weekday = f"{weekday}(?:,{weekday})*"
    any_month = f"{month}(?:,{month})*"
    # A weekday field not starting with `*` makes day and weekday alternatives (either fires).
    weekday_named = _alt([_number(*WEEKDAY), _range(WEEKDAY) + f"(?:{_step(WEEKDAY)})?"]) + f"(?:,{weekday})*"
    days = _alt([
        f"{_list_with(day, low_day)} {any_month} {any_weekday}",
        f"{_alt([days_from_30, days_from_31])} {any_month} {weekday_named}",
        f"{days_from_30} {_months_having(30)} {any_weekday}",
        f"{days_from_31} {_months_having(31)} {any_weekday}",
    ])  # fmt: skip
    minute, hour = _item(MINUTE), _item(HOUR)
    return f"{minute}(?:,{minute})* {hour}(?:,{hour})* {days}"


@cache
def _compiled() -> re.Pattern[str]:
    return re.compile(cron_pattern())


def is_cron(text: str) -> bool:
    return _compiled().fullmatch(text) is not None


CRON_PROBLEM = "is not a five-field cron expression (minute hour day month weekday; numbers, *, ranges, steps, lists)"
