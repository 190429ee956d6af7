"""Write marks: how a MongoDB adapter tells, after losing the answer to a write, whether the write
applied. Pure: the marks, the update that carries them, and the decision (no I/O here).

Every versioned write (a task, item record, lock or schedule compare-and-set, and their inserts)
adds a mark `"<version>:<random>"` to the document's `WriteMarks`, keeping the newest KEEP. The
mark is new for each write call, so no other writer's write can carry it. When the answer is
lost (common.store.mongo.settle), the document read back from the primary says:

- our mark is there: our write applied (once: the version filter lets it apply at most once);
- the document is at our version or past it, and its marks reach back to our version without
  ours: another writer took that version, we lost the race (exactly as a `matched_count` of 0);
- the document is older than our version: our write is not there (yet): it may be sent again,
  and the version filter again lets it apply at most once;
- the document moved on more than KEEP versions since: nothing tells; the adapter says so
  (StoreError) rather than guess.

`WriteMarks` belongs to the MongoDB documents only: the adapters project it away on every read,
so no Task, ItemRecord, KeyLock or Schedule ever holds it.
"""

from __future__ import annotations

import secrets
from enum import Enum
from typing import Any

FIELD = "WriteMarks"
KEEP = 8  # versions back a read-back can still decide; far more than writes in one failover
HIDDEN = {FIELD: False}  # a projection that leaves the marks out
MARKS_ONLY = {"_id": False, FIELD: True}  # a projection of the marks alone


class Outcome(Enum):
    APPLIED = "applied"  # our write is in the document
    LOST = "lost"  # another writer took the version: our write never applied
    ABSENT = "absent"  # the document is older than our write: send it again
    UNKNOWN = "unknown"  # the document moved on past what its marks remember


def new_mark(version: int) -> str:
    return f"{version}:{secrets.token_hex(8)}"


def mark_version(mark: str) -> int:
    return int(mark.split(":", 1)[0])


def decide(stored_version: int, marks: list[str], mark: str) -> Outcome:
    """What the document read back says of the write that carried `mark`."""
    if mark in marks:
        return Outcome.APPLIED
    version = mark_version(mark)
    if stored_version < version:
        return Outcome.ABSENT
    if any(mark_version(m) <= version for m in marks):
        return Outcome.LOST
    return Outcome.UNKNOWN


def marked_replacement(doc: dict[str, Any], mark: str) -> list[dict[str, Any]]:
    """An update pipeline that replaces the document by `doc` (taken literally: a `$` in the data
    stays data) and keeps the newest KEEP marks, ours last."""
    kept = {"$slice": [{"$concatArrays": [{"$ifNull": [f"${FIELD}", []]}, [mark]]}, -KEEP]}
    return [{"$replaceWith": {"$mergeObjects": [{"$literal": doc}, {FIELD: kept}]}}]


def with_marks(doc: dict[str, Any], old_marks: list[str], mark: str) -> dict[str, Any]:
    """The same, as a plain replacement: for an in-memory store that runs no update pipelines,
    where the adapter reads the old marks under the lock that makes each call run alone."""
    return {**doc, FIELD: [*old_marks, mark][-KEEP:]}
