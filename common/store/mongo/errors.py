"""What a MongoDB driver error means to baton: retry later, or never.

Every Mongo adapter runs each public call through `adapter_edge`, so nothing above the adapters
sees a pymongo or bson type:

- a write the server (or the driver, before sending it) refuses for the data itself: too large,
  nested too deep, an integer past 64 bits, a key BSON cannot hold, text that is not valid Unicode. Sending it again gives the same
  answer, so it becomes StoreRefused (the API answers 422; retrying forever as "unavailable" would
  never end);
- a duplicate key: the adapter's own `duplicate` class (DuplicateTask for tasks);
- anything else (network, timeout, no primary, a write concern not met): StoreError, try again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from bson.errors import BSONError
from pymongo.errors import DuplicateKeyError, OperationFailure, PyMongoError

from common.errors import BatonError, StoreError, StoreRefused

P = ParamSpec("P")
R = TypeVar("R")

# Server error codes that refuse the data itself (the same write always fails the same way).
PERMANENT_CODES = {
    2,  # BadValue
    10334,  # BSONObjectTooLarge
    15,  # Overflow (nesting depth)
    17419,  # document grew past the size limit (update)
    17420,  # same, for a replacement
    22,  # InvalidBSON
    52,  # DollarPrefixedFieldName
    56,  # EmptyFieldName
    57,  # DottedFieldName
    10,  # BSONObjectTooLarge (legacy)
}


def describe(error: BaseException) -> str:
    return str(error) or type(error).__name__


def translate(error: BaseException, what: str, duplicate: type[BatonError] = StoreError) -> BatonError:
    """The baton error for a driver error raised while `what` (e.g. "mongodb inventory") ran."""
    if isinstance(error, DuplicateKeyError):
        return duplicate(describe(error))
    # UnicodeError: text that is not valid Unicode (a lone surrogate) cannot be encoded at all.
    if isinstance(error, (BSONError, OverflowError, UnicodeError)) or (
        isinstance(error, OperationFailure) and error.code in PERMANENT_CODES
    ):
        # The text names the problem ("BSON document too large (17826034 bytes)..."), no value.
        return StoreRefused(f"{what} refuses the write: {describe(error)}")
    return StoreError(f"{what}: {describe(error)}")


def adapter_edge(what: str | None, duplicate: type[BatonError] = StoreError) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate an adapter method: errors translated (named `what`, or the adapter's WHAT when
    None: a base class's method serving several adapters); on mongomock the call runs alone (the
    adapter's `_serial`, see common.store.mongo.tasks.serializer)."""

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(method)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            adapter: Any = args[0]
            try:
                with adapter._serial:
                    return method(*args, **kwargs)
            except (PyMongoError, BSONError, OverflowError, UnicodeError) as e:
                raise translate(e, what or adapter.WHAT, duplicate) from e

        return wrapper

    return decorate
