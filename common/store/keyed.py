"""Documents kept one per key and written whole by compare-and-set on their Version: a lock
key's (common.store.gates.lock.port), a rate key's (common.store.gates.rate.port). Their adapters share
common.store.sqlite.keyed and common.store.mongo.keyed; what differs is the table and the
document's type.

Documents are never deleted: a re-created key would restart its Version, and a writer holding an
old read could then win a compare-and-set it must lose.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from pydantic import BaseModel


class Keyed(Protocol):
    Key: str
    Version: int


KeyedDocument = TypeVar("KeyedDocument", bound=BaseModel)


def check_next_version(document: Keyed, expected_version: int, what: str) -> None:
    """A compare-and-set writes the next Version, never another (a caller's mistake: ValueError)."""
    if document.Version != expected_version + 1:
        raise ValueError(f"{what} Version must be {expected_version + 1}, not {document.Version}")
