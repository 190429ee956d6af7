"""An outbox entry's body, typed per kind, and the one table of who flushes each kind.

The stored `OutboxEntry.Body` stays a plain mapping (documents written before read as they
are); a flusher reads it through `body_of`, which checks it against the kind's model. `FLUSHERS`
is the table every flusher dispatches on: the committer's publisher (common.relay.outbox) picks
the relay of an entry from it, and each relay its handler, so a new kind is one row here and one
handler there (a test checks every kind has both).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from common.engine.codes import OutboxKind


class Flusher(StrEnum):
    """Who carries an entry out."""

    BROKER = "broker"  # published to a module queue; the claim removes it
    WEBHOOK = "webhook"  # POSTed by the webhook deliverer (common.relay.webhooks)
    CHILDREN = "children"  # a change of another task (common.relay.child_relay)
    LOCKS = "locks"  # a change of the lock table (common.relay.lock_relay)
    ITEMS = "items"  # a change of a step's item records (common.relay.items)
    RATES = "rates"  # a slot taken in the rate table (its relay: common.store.gates.rate)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Open(BaseModel):
    """A body whose rest is another document (a step message, a child task, a webhook payload)."""

    model_config = ConfigDict(extra="allow", frozen=True)


class PublishBody(_Open):
    TaskId: str
    Cursor: int
    DispatchId: str


class WebhookBody(_Open):
    EventId: str
    Event: str
    TaskId: str


class StartChildBody(_Open):
    TaskId: str  # the child's
    ParentTaskId: str
    DispatchId: str


class UndoChildBody(_Body):
    TaskId: str
    ParentTaskId: str
    DispatchId: str


class ChildActionBody(_Body):
    """An operator's cancel, pause or resume of the parent, passed on to its child."""

    TaskId: str
    ParentTaskId: str
    Actor: str
    Reason: str
    # A cancel that stops the child's running runs too (a wave's check, docs/design/waves.md):
    # left out when false, so the release before reads it.
    StopRunning: bool = Field(False, exclude_if=lambda value: not value)


class ChildFinishedBody(_Body):
    TaskId: str  # the parent's
    Cursor: int
    Item: int | None = None
    ChildTaskId: str
    Status: int
    Message: str = ""
    Output: dict[str, Any] = {}


class TaskFinishedBody(_Body):
    TaskId: str  # the waiter's
    AwaitedTaskId: str
    Status: int


class LockAcquireBody(_Body):
    Key: str
    Limit: int = 1
    TaskId: str
    Member: str | None = None  # a step lock's member names its unit
    Priority: int = 0
    Seq: float = 0.0
    Mode: str = "exclusive"  # common.engine.gates.lock.modes
    Shares: list[str] = Field(default_factory=lambda: ["exclusive"])


class LockReleaseBody(_Body):
    Key: str
    TaskId: str
    Member: str | None = None
    Generation: int = 0


class RateTakeBody(_Body):
    Key: str
    Limit: int
    Per: float
    TaskId: str
    Generation: int = 0
    DispatchId: str | None = None  # a step's rate: the run that waits (None: the task's own rate)


class ItemsBody(_Body):
    Cursor: int
    Generation: int
    Values: list[Any] | None = None  # open_items only: the values, fixed when the step opened
    # open_items of a page of a source (docs/design/item-sources.md): its first item's index, and
    # whether it is the last page (the relay then asks whether the step settled)
    From: int | None = None
    Last: bool | None = None
    # reopen_item_rollbacks only: the operator's action (retry-rollback or compensate), who, why
    Action: str | None = None
    Actor: str | None = None
    Reason: str | None = None
    # cancel_items only, from a cancel that stops running runs: its {Actor, Reason}; the claimed
    # normal runs are stopped too
    Stop: dict[str, str] | None = None
    # wave_gate only: the wave whose gate it ends, and the phase it ends (baking, or paused)
    Wave: int | None = None
    Phase: str | None = None


# kind -> (its body's model, who flushes it)
FLUSHERS: dict[OutboxKind, tuple[type[BaseModel], Flusher]] = {
    OutboxKind.PUBLISH: (PublishBody, Flusher.BROKER),
    OutboxKind.WEBHOOK: (WebhookBody, Flusher.WEBHOOK),
    OutboxKind.START_CHILD: (StartChildBody, Flusher.CHILDREN),
    OutboxKind.UNDO_CHILD: (UndoChildBody, Flusher.CHILDREN),
    OutboxKind.CANCEL_CHILD: (ChildActionBody, Flusher.CHILDREN),
    OutboxKind.PAUSE_CHILD: (ChildActionBody, Flusher.CHILDREN),
    OutboxKind.RESUME_CHILD: (ChildActionBody, Flusher.CHILDREN),
    OutboxKind.CHILD_FINISHED: (ChildFinishedBody, Flusher.CHILDREN),
    OutboxKind.TASK_FINISHED: (TaskFinishedBody, Flusher.CHILDREN),
    OutboxKind.LOCK_ACQUIRE: (LockAcquireBody, Flusher.LOCKS),
    OutboxKind.LOCK_RELEASE: (LockReleaseBody, Flusher.LOCKS),
    OutboxKind.RATE_TAKE: (RateTakeBody, Flusher.RATES),
    OutboxKind.OPEN_ITEMS: (ItemsBody, Flusher.ITEMS),
    OutboxKind.CANCEL_ITEMS: (ItemsBody, Flusher.ITEMS),
    OutboxKind.ROLLBACK_ITEMS: (ItemsBody, Flusher.ITEMS),
    OutboxKind.RESUME_ITEMS: (ItemsBody, Flusher.ITEMS),
    OutboxKind.REOPEN_ROLLBACKS: (ItemsBody, Flusher.ITEMS),
    OutboxKind.REDRIVE_ITEMS: (ItemsBody, Flusher.ITEMS),
    OutboxKind.WAVE_GATE: (ItemsBody, Flusher.ITEMS),
}


def kinds_of(flusher: Flusher) -> frozenset[OutboxKind]:
    return frozenset(kind for kind, (_, by) in FLUSHERS.items() if by is flusher)


def flusher_of(kind: OutboxKind) -> Flusher:
    return FLUSHERS[kind][1]


def body_of(kind: OutboxKind, body: dict[str, Any]) -> Any:
    """The entry's body as its kind's model (pydantic.ValidationError if it is not one)."""
    return FLUSHERS[kind][0].model_validate(body)
