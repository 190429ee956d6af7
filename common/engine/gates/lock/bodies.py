"""The bodies of the outbox entries the lock gate declares (`OUTBOX_KINDS` in its declares.py
names them), as common.engine.outbox.body_of checks an entry's body when its relay reads it."""

from __future__ import annotations

from pydantic import Field

from common.engine.core.bodies import Body


class LockAcquireBody(Body):
    Key: str
    Limit: int = 1
    TaskId: str
    Member: str | None = None  # a step lock's member names its unit
    Priority: int = 0
    Seq: float = 0.0
    Mode: str = "exclusive"  # common.engine.gates.lock.modes
    Shares: list[str] = Field(default_factory=lambda: ["exclusive"])


class LockReleaseBody(Body):
    Key: str
    TaskId: str
    Member: str | None = None
    Generation: int = 0
