"""A pydantic model built from values already valid, without validating them again.

model_construct would do it, but looks up each field's default (as much work as the validation
saved); these callers already hold every field's value. The one place that sets pydantic's
instance internals, so that an upgrade of pydantic that changes them is mended here alone.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

Model = TypeVar("Model", bound=BaseModel)


def prevalidated(cls: type[Model], values: dict[str, Any], fields_set: set[str]) -> Model:
    """An instance of `cls` holding `values` (every field's, in the model's field order: its
    `__dict__`, taken as it is) with `fields_set` as the fields set explicitly."""
    made = cls.__new__(cls)
    object.__setattr__(made, "__dict__", values)
    object.__setattr__(made, "__pydantic_fields_set__", fields_set)
    object.__setattr__(made, "__pydantic_extra__", None)
    object.__setattr__(made, "__pydantic_private__", None)
    return made
