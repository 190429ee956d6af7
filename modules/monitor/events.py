"""What report_event records: pure, from the step's context and the time."""

from __future__ import annotations

from common.runtime.registry import CommandContext
from common.engine.states import Phase
from common.store.side.events import Event


def event_for(ctx: CommandContext, now: float) -> Event:
    """In a normal phase the task reports progress; as a rollback, that it was abandoned."""
    subject = ctx.parameters.get("name")
    subject = subject if isinstance(subject, str) and len(subject) <= 200 else None
    about = f" for {subject}" if subject else ""
    if ctx.phase is Phase.ROLLBACK:
        kind, message = "abandoned", f"{ctx.task_type}{about} abandoned; rolling back"
    else:
        kind, message = "progress", f"{ctx.task_type}{about} reached step {ctx.cursor}"
    return Event(
        EventId=ctx.idempotency_key,  # a re-run records nothing new
        Time=now,
        Kind=kind,
        Message=message,
        TaskId=ctx.task_id,
        TaskType=ctx.task_type,
        Subject=subject,
        Data={"step": ctx.cursor, "phase": ctx.phase.label},
    )
