"""The bodies of the outbox entries the after-task gate declares (`OUTBOX_KINDS` in its declares.py
names them), as common.engine.outbox.body_of checks an entry's body when its relay reads it."""

from __future__ import annotations

from common.engine.core.bodies import Body


class TaskFinishedBody(Body):
    TaskId: str  # the waiter's
    AwaitedTaskId: str
    Status: int
