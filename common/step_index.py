"""A step named by its index, as a request spells it (a REST path, a CLI argument).

An index has one spelling, the one the task view prints: ASCII digits without leading zeros.
"00" or "007" is refused, not read as step 0 or 7: a client that builds such a string has a bug
worth hearing about. Step names start with a letter (flows.yaml), so digits are never a name.
"""

from __future__ import annotations

import re

_CANONICAL = re.compile(r"0|[1-9][0-9]*")
# What a path's step may be, published in the API's schema (ECMA-262, as OpenAPI reads it): an
# index in its one spelling, or anything else read as a name; only an index written with a
# leading zero is left out. Published, not enforced by the framework: the route's own 422 names
# the value and says how an index is written.
STEP_PATH_SCHEMA = {"pattern": r"^(0|[1-9][0-9]*|[^0-9][\s\S]*|[0-9]+[^0-9][\s\S]*)$"}


class BadStepIndex(ValueError):
    """Digits that are not an index's one spelling: the request's form, not the task's."""

    def __init__(self, text: str, what: str = "step"):
        super().__init__(f"{what} {text!r}: an index is written in digits without leading zeros (0, 1, 12)")


def is_index(text: str) -> bool:
    """Whether `text` is written as an index (ASCII digits: "٣".isdigit() is true too)."""
    return text.isascii() and text.isdigit()


def step_index(text: str | int, what: str = "step") -> int | None:
    """The index `text` spells; None when it is no index (a step's name); BadStepIndex when its
    digits are not an index's one spelling."""
    if isinstance(text, int):
        return text
    if not is_index(text):
        return None
    if not _CANONICAL.fullmatch(text):
        raise BadStepIndex(text, what)
    return int(text)


class NoSuchUnit(ValueError):
    """A step or item index outside what the task has (`field`: "step" or "item"): a request
    that names a unit needs one of the task's, as a body's value out of its range."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
