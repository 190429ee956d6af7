"""Fault injection at the MongoDB adapter's boundary: a write whose answer is lost.

No replica set can run on this machine, so a primary failing over in the middle of a write is
played at the one place where its effect shows: the collection the adapter writes through. A
`LosingCollection` wraps a real pymongo collection (on a real wire-protocol server) and makes its
next armed writes fail with the driver's own exception classes, as a failover does:

- "after": the write runs on the server and applies, then the error is raised (the answer lost:
  a network error or a step-down after the primary applied it);
- "before": the error is raised and nothing is written (the primary failed before it).

A hook may run between the two, as another writer would during the failover. Reads pass
through unchanged: the read-back is what is under test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pymongo.errors import AutoReconnect, NetworkTimeout, NotPrimaryError, OperationFailure, PyMongoError

WRITES = {"insert_one", "insert_many", "update_one", "replace_one", "find_one_and_update", "delete_one",
          "delete_many"}  # fmt: skip


def lost_answer_errors() -> dict[str, Callable[[], PyMongoError]]:
    """The driver's errors that leave a write's outcome unknown, by name."""
    return {
        "network": lambda: AutoReconnect("connection closed by peer"),
        "not-writable-primary": lambda: NotPrimaryError("not primary", {"code": 10107, "errmsg": "not primary"}),
        "not-primary-no-secondary-ok": lambda: NotPrimaryError(
            "not primary and secondaryOk=false", {"code": 13435, "errmsg": "not primary and secondaryOk=false"}),
        "step-down": lambda: OperationFailure(
            "primary stepped down", 189, {"code": 189, "errmsg": "stepped down",
                                          "errorLabels": ["RetryableWriteError"]}),  # fmt: skip
        "timeout": lambda: NetworkTimeout("timed out"),
    }


@dataclass
class Fault:
    when: str  # "after" or "before"
    error: PyMongoError
    hook: Callable[[], Any] | None = None


class LosingCollection:
    """A pymongo collection whose next armed writes lose their answers (see the module doc)."""

    def __init__(self, collection: Any):
        self._collection = collection
        self._faults: list[Fault] = []
        self.faulted = 0  # writes that failed so far

    def arm(self, when: str, error: PyMongoError, hook: Callable[[], Any] | None = None) -> None:
        assert when in ("after", "before")
        self._faults.append(Fault(when, error, hook))

    @property
    def armed(self) -> int:
        return len(self._faults)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._collection, name)
        if name not in WRITES:
            return attribute

        def write(*args: Any, **kwargs: Any) -> Any:
            if not self._faults:
                return attribute(*args, **kwargs)
            fault = self._faults.pop(0)
            if fault.when == "after":
                attribute(*args, **kwargs)  # applied on the server; the answer never comes back
            if fault.hook is not None:
                fault.hook()
            self.faulted += 1
            raise fault.error

        return write
