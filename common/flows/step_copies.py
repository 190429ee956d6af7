"""Copies of a task type's steps for a new task, the task's own to change, for a fraction of
reading them back from JSON.

Each step is read back from its JSON once per task type (a pristine copy no task holds), and a
plan is worked out of it once: which of its values (and of theirs) are mutable, and so copied for
each task; the others (text, numbers, enum members, tuples of them) are shared, as nothing can
change them. A copy is then what reading the JSON gives: the same values, in the same order, the
same fields set. A value the plan does not know (a set, an object of another class) leaves the
task type to the JSON way.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar

from pydantic import BaseModel

from common.prevalidated import prevalidated

Model = TypeVar("Model", bound=BaseModel)
Copier = Callable[[Any], Any]
_IMMUTABLE = (str, int, float, bool, type(None))


class NoPlan(Exception):
    """A value a plan cannot copy for sure."""


def copier_of(pristine: Model) -> Callable[[], Model]:
    """A function that copies `pristine` (never changed, never handed out), sharing nothing
    mutable with it; NoPlan when some value of it is of a kind not known here."""
    plan = _plan(pristine)
    assert plan is not None  # a model always has one
    return lambda: plan(pristine)  # type: ignore[no-any-return]


def _plan(value: Any) -> Copier | None:
    """How to copy `value`; None: it is immutable, shared as it is."""
    kind = type(value)
    if kind in _IMMUTABLE or isinstance(value, Enum):
        return None
    if kind is tuple:
        if any(_plan(item) is not None for item in value):
            raise NoPlan(f"a tuple holding mutable values: {value!r}")
        return None
    if kind is list:
        plans = [_plan(item) for item in value]
        if not any(plans):
            return list
        return lambda items: [plan(item) if plan else item for plan, item in zip(plans, items)]
    if kind is dict:
        planned = {key: plan for key, item in value.items() if (plan := _plan(item)) is not None}
        if not planned:
            return dict
        return lambda items: {key: planned[key](item) if key in planned else item for key, item in items.items()}
    if isinstance(value, BaseModel) and value.__pydantic_extra__ is None and value.__pydantic_private__ is None:
        return _model_plan(value)
    raise NoPlan(f"a value of {kind.__name__}")


def _model_plan(model: BaseModel) -> Copier:
    fields = [(name, plan) for name, item in model.__dict__.items() if (plan := _plan(item)) is not None]
    cls = type(model)

    def copy(original: BaseModel) -> BaseModel:
        values = dict(original.__dict__)
        for name, plan in fields:
            values[name] = plan(values[name])
        return prevalidated(cls, values, set(original.__pydantic_fields_set__))

    return copy
