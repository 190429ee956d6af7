"""The bodies of the outbox entries the rate gate declares (`OUTBOX_KINDS` in its declares.py
names them), as common.engine.outbox.body_of checks an entry's body when its relay reads it."""

from __future__ import annotations

from common.engine.core.bodies import Body


class RateTakeBody(Body):
    Key: str
    Limit: int
    Per: float
    TaskId: str
    Generation: int = 0
    DispatchId: str | None = None  # a step's rate: the run that waits (None: the task's own rate)
