"""Enums whose `.value` is read in C.

Python 3.11 reads an enum member's `value` through `enum.property`, a descriptor written in
Python: two Python calls per read. pydantic-core reads it for every enum it writes as JSON (a
task document holds a few dozen: each step's and run's state, each history event's phase), so
the task's encoding spent about a tenth of its time there. A plain `property` over the member's
`_value_` (the attribute `enum.property` returns) gives the same answer from C.
"""

from __future__ import annotations

import operator
from enum import Enum
from typing import TypeVar

E = TypeVar("E", bound=type[Enum])


def quick_value(enum_class: E) -> E:
    """`enum_class`, its members' `value` read through a C-level property (usable as a decorator)."""
    enum_class.value = property(operator.attrgetter("_value_"), doc="The member's value.")  # type: ignore[assignment]
    return enum_class
