"""A write whose answer was lost, settled by reading the document back: never by guessing, never
by blindly sending again a write that is not idempotent.

The driver retries a write once itself (retryable writes, common.store.mongo.client), and the
server remembers a retried write so that it applies once. What reaches the adapter after that
(a second network error, no primary within the timeout, a step-down, a write concern not met)
leaves the outcome unknown: the write may be on the majority, or never anywhere. The adapters
settle it here:

- a versioned write (compare-and-set, or insert of a versioned document) reads the document back
  from the primary with read concern "majority" and decides from its Version and WriteMarks
  (common.store.mongo.marks). A write that is not there yet is sent again: its version filter
  (or unique key) lets it apply at most once, so sending it again is safe, and the next read
  tells which writer won;
- a call that is idempotent as a whole (an upsert by key, a conditional update that reads its
  state first: the inventory, the sweeper's lock, the module registry) simply runs again.

Either gives up after SETTLE_TRIES rounds, or once the store timeout has passed, with the last error, which the adapter's edge turns
into StoreError: the caller then treats the call as failed, as it does every StoreError.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import structlog
from pymongo.errors import (
    ConnectionFailure,
    DuplicateKeyError,
    ExecutionTimeout,
    OperationFailure,
    PyMongoError,
    ServerSelectionTimeoutError,
    WriteConcernError,
    WTimeoutError,
)

from common.errors import StoreError
from common.store.mongo.errors import describe
from common.store.mongo.marks import Outcome, decide

log = structlog.get_logger(__name__)

R = TypeVar("R")
SETTLE_TRIES = 20
PAUSE_SECONDS = 0.05  # doubled each round up to a second: an election takes a few seconds

# Server codes of "this node is no longer (or not yet) the primary" and of an interrupted
# operation: the write may or may not have applied before it stopped.
UNKNOWN_CODES = {
    10107,  # NotWritablePrimary
    13435,  # NotPrimaryNoSecondaryOk
    13436,  # NotPrimaryOrSecondary
    189,  # PrimarySteppedDown
    91,  # ShutdownInProgress
    11600,  # InterruptedAtShutdown
    11602,  # InterruptedDueToReplStateChange
    50,  # MaxTimeMSExpired
    262,  # ExceededTimeLimit
    64,  # WriteConcernFailed
}


def outcome_unknown(error: BaseException) -> bool:
    """Did this error leave the write's outcome unknown (as opposed to a refusal, which did not
    apply it)?"""
    if not isinstance(error, PyMongoError):
        return False
    if isinstance(error, ServerSelectionTimeoutError):
        # No server was selected, so nothing was sent (a retryable write whose retry finds no
        # server raises its first attempt's error instead, which is judged below).
        return False
    if error.has_error_label("RetryableWriteError") or error.has_error_label("UnknownTransactionCommitResult"):
        return True
    if isinstance(error, (ConnectionFailure, WTimeoutError, WriteConcernError, ExecutionTimeout)):
        return True  # ConnectionFailure: AutoReconnect, NotPrimaryError, NetworkTimeout, no server
    if isinstance(error, OperationFailure) and error.code in UNKNOWN_CODES:
        return True
    details = getattr(error, "details", None) or {}
    if isinstance(details, dict) and details.get("writeConcernErrors"):
        return True  # a bulk write applied on the primary, its majority unconfirmed
    return bool(getattr(error, "timeout", False))


def _pause(attempt: int) -> None:
    time.sleep(min(1.0, PAUSE_SECONDS * 2**attempt))


def _rounds(deadline: float) -> Iterator[int]:
    """Rounds of reading back: at most SETTLE_TRIES, and none started past the deadline (the
    store timeout: a caller waits for a settled write no longer than for any other call)."""
    for attempt in range(SETTLE_TRIES):
        if attempt and time.monotonic() > deadline:
            return
        yield attempt


def settle_write(write: Callable[[], bool], read_back: Callable[[], tuple[int, list[str]] | None],
                 mark: str, what: str, budget: float) -> bool:
    """Run a compare-and-set carrying `mark`; if its answer is lost, decide from the document read
    back ((Version, WriteMarks), or None when gone). True: applied; False: lost the race."""
    try:
        if write():
            return True
        # No match: another writer took the version, or ours applied and the driver's own retry
        # of it (its first answer lost) found it applied. MongoDB remembers a retried write and
        # answers as the first time; a server that forgot it (restarted) says "no match". The
        # marks tell the two apart.
        stored = read_back()
        return stored is not None and mark in stored[1]
    except PyMongoError as error:
        if not outcome_unknown(error):
            raise
        last = error
    # info, not warning: settling is routine after a failover; a write it cannot settle raises.
    log.info("mongodb write outcome unknown, reading back", what=what, error=describe(last))
    deadline = time.monotonic() + budget
    for attempt in _rounds(deadline):
        try:
            stored = read_back()
            if stored is None:
                return False  # deleted: nothing of ours is there
            outcome = decide(stored[0], stored[1], mark)
            log.info("mongodb write settled" if outcome is not Outcome.ABSENT else "mongodb write sent again",
                     what=what, outcome=outcome.value)  # fmt: skip
            if outcome is Outcome.APPLIED:
                return True
            if outcome is Outcome.LOST:
                return False
            if outcome is Outcome.UNKNOWN:
                raise StoreError(f"{what}: the outcome of a write is unknown: the document moved on"
                                 " past what its write marks remember")
            if write():  # ABSENT: the version filter lets it apply at most once
                return True
        except PyMongoError as error:
            if not outcome_unknown(error):
                raise
            last = error
        _pause(attempt)
    raise last


def settle_insert(insert: Callable[[], None], read_marks: Callable[[], list[str] | None], mark: str,
                  what: str, budget: float) -> None:
    """Insert a document carrying `mark`; if its answer is lost, read back by its key (its marks,
    or None when there is no such document). Returns when ours is stored; raises the
    DuplicateKeyError when another document holds the key (ours never applied)."""
    try:
        insert()
        return
    except DuplicateKeyError as refused:
        # Another document holds a key, or ours applied and the driver's retry of it was refused
        # by a server that forgot the first (see settle_write): our mark tells.
        try:
            stored = read_marks()
        except PyMongoError:
            raise refused from None
        if stored is not None and mark in stored:
            return
        raise
    except PyMongoError as error:
        if not outcome_unknown(error):
            raise
        last: PyMongoError = error
    log.info("mongodb insert outcome unknown, reading back", what=what, error=describe(last))
    duplicate: DuplicateKeyError | None = None
    deadline = time.monotonic() + budget
    for attempt in _rounds(deadline):
        try:
            marks = read_marks()
            if marks is not None:
                if mark in marks:
                    return
                raise duplicate or DuplicateKeyError(f"{what}: the key is taken by another document")
            if duplicate is not None:
                raise duplicate  # refused for a key of another document (an idempotency key)
            try:
                insert()  # a unique key lets it apply at most once
                return
            except DuplicateKeyError as refused:
                duplicate = refused  # ours, applied before (read again), or another's
                continue
        except DuplicateKeyError:
            raise
        except PyMongoError as error:
            if not outcome_unknown(error):
                raise
            last = error
        _pause(attempt)
    raise last


def rerun(call: Callable[[], R], what: str, budget: float) -> R:
    """Run an idempotent call; run it again while its outcome is unknown."""
    deadline = time.monotonic() + budget
    for attempt in range(SETTLE_TRIES):
        try:
            return call()
        except PyMongoError as error:
            if not outcome_unknown(error) or attempt == SETTLE_TRIES - 1 or time.monotonic() > deadline:
                raise
            log.warning("mongodb call outcome unknown, running it again", what=what, error=describe(error))
        _pause(attempt)
    raise AssertionError("unreachable")
