"""What travels on a queue besides the outbox entries: the step message a module claims, and
the alarm an operator is shown."""

from __future__ import annotations

from typing import Any

import pydantic_core
from pydantic import Field

from common.engine.codes import AlarmKind
from common.engine.core.doc_base import Doc as _Doc
from common.engine.states import Phase as PhaseCode
from common.tracing.carrier import TraceContext


class StepMessage(_Doc):
    """What travels on a module queue: "perform step Cursor of TaskId in phase Type".

    The store stays the source of truth; `DispatchId` and `Attempt` fence stale deliveries.
    """

    TaskId: str
    Cursor: int = Field(ge=0)
    Item: int | None = Field(None, ge=0)
    Type: PhaseCode
    # Written by baton in format 1 and ignored since: the claim reads the document's.
    Parameters: dict[str, Any] = Field(default_factory=dict)
    Module: str
    Command: str
    Timeout: float = Field(gt=0)
    Retry: int = Field(ge=0)
    DispatchId: str
    Attempt: int = Field(ge=1)
    Trace: TraceContext | None = None  # the task's, and the publishing span (left out when None)


def named_task(body: bytes) -> str | None:
    """The TaskId a step message names, even when the rest of it cannot be parsed (nested too
    deep, a field of the wrong type): read from its first bytes only, as far as they parse (baton
    writes TaskId first; the shorter window stays under the parser's nesting limit)."""
    for window in (1024, 192):
        try:
            head = pydantic_core.from_json(body[:window], allow_partial=True)
        except ValueError:
            continue
        task_id = head.get("TaskId") if isinstance(head, dict) else None
        return task_id if isinstance(task_id, str) and 0 < len(task_id) <= 128 else None
    return None


class Alarm(_Doc):
    """A system alarm for an operator: a rollback that failed, or a message nobody could read."""

    AlarmId: str
    Kind: AlarmKind
    Time: float
    Message: str
    TaskId: str | None = None
    Cursor: int | None = None
    Phase: PhaseCode | None = None
    Module: str | None = None
    Command: str | None = None
    Acknowledged: bool = False
    AcknowledgedBy: str | None = None
    AcknowledgedAt: float | None = None
    AcknowledgedReason: str | None = None  # given with a bulk acknowledgement (the console's)
