"""The fields of the task document a wait for another task is kept in (docs/design/operations.md)."""

from __future__ import annotations

from pydantic import Field

from common.engine.core.doc_base import Doc


class AfterTaskFields(Doc):
    # The submission's after_task, as the id it named: a repeat of the idempotency key must name
    # the same task (WaitingFor forgets it once that task ended).
    AfterTask: str | None = None
    AwaitedBy: list[str] = Field(default_factory=list)  # tasks whose WaitingFor names this one
