"""An outbox entry's body, typed per kind, and the one table of who flushes each kind.

The stored `OutboxEntry.Body` stays a plain mapping (documents written before read as they
are); a flusher reads it through `body_of`, which checks it against the kind's model. `FLUSHERS`
is the table every flusher dispatches on: the committer's publisher (common.relay.outbox) picks
the relay of an entry from it, and each relay its handler. A plug-in's kind is declared in its
folder with its body and its flusher (its `declares.py`), and handled by its relay (a test checks
every kind has both).
"""

from __future__ import annotations

import importlib
from enum import StrEnum
from typing import Any

from pydantic import BaseModel

from common.engine.codes import OutboxKind
from common.engine.core.bodies import OpenBody
from common.engine.core.declared import declared


# Who carries an entry out: the engine's own three, and each plug-in's (`FLUSHERS` in its
# folder's declares.py: the lock and rate tables' relays, the item records' relay).
Flusher = StrEnum("Flusher", [  # type: ignore[misc]
    ("BROKER", "broker"),  # published to a module queue; the claim removes it
    ("WEBHOOK", "webhook"),  # POSTed by the webhook deliverer (common.relay.webhooks)
    ("CHILDREN", "children"),  # a change of another task (common.relay.child_relay)
    *declared("FLUSHERS").items(),
], module=__name__)
Flusher.__doc__ = "Who carries an entry out."


class PublishBody(OpenBody):
    TaskId: str
    Cursor: int
    DispatchId: str


class WebhookBody(OpenBody):
    EventId: str
    Event: str
    TaskId: str


def _body(name: str) -> type[BaseModel]:
    """A plug-in's body, named "module:Class" in its declares.py (which imports nothing, so the
    engine's shared tables are read without pydantic: `baton get` starts light)."""
    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)  # type: ignore[no-any-return]


# kind -> (its body's model, who flushes it): the engine's own, then each plug-in's declared kinds
FLUSHERS: dict[OutboxKind, tuple[type[BaseModel], Flusher]] = {
    OutboxKind.PUBLISH: (PublishBody, Flusher.BROKER),
    OutboxKind.WEBHOOK: (WebhookBody, Flusher.WEBHOOK),
    **{OutboxKind(value): (_body(body), Flusher(by)) for value, body, by in declared("OUTBOX_KINDS").values()},
}


def kinds_of(flusher: Flusher) -> frozenset[OutboxKind]:
    return frozenset(kind for kind, (_, by) in FLUSHERS.items() if by is flusher)


def flusher_of(kind: OutboxKind) -> Flusher:
    return FLUSHERS[kind][1]


def body_of(kind: OutboxKind, body: dict[str, Any]) -> Any:
    """The entry's body as its kind's model (pydantic.ValidationError if it is not one)."""
    return FLUSHERS[kind][0].model_validate(body)
