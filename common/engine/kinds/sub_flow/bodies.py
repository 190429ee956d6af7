"""The bodies of the outbox entries the sub-flow kind declares (`OUTBOX_KINDS` in its declares.py
names them), as common.engine.outbox.body_of checks an entry's body when its relay reads it."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from common.engine.core.bodies import Body, OpenBody


class StartChildBody(OpenBody):
    TaskId: str  # the child's
    ParentTaskId: str
    DispatchId: str


class UndoChildBody(Body):
    TaskId: str
    ParentTaskId: str
    DispatchId: str


class ChildActionBody(Body):
    """An operator's cancel, pause or resume of the parent, passed on to its child."""

    TaskId: str
    ParentTaskId: str
    Actor: str
    Reason: str
    # A cancel that stops the child's running runs too (a wave's check, docs/design/waves.md):
    # left out when false, so the release before reads it.
    StopRunning: bool = Field(False, exclude_if=lambda value: not value)


class ChildFinishedBody(Body):
    TaskId: str  # the parent's
    Cursor: int
    Item: int | None = None
    ChildTaskId: str
    Status: int
    Message: str = ""
    Output: dict[str, Any] = {}
