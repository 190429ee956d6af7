"""The event log port: what the monitor records about tasks (a creation started, abandoned...).

Events are for people reading a history, not for the engine: nothing decides anything from them.
Recording is idempotent on EventId (a command's idempotency key), so a re-run records once.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field


class Event(BaseModel):
    # Field names styled like the task document and Alarm, which they sit beside.
    model_config = ConfigDict(extra="forbid")

    EventId: str
    Time: float
    Kind: str  # "progress" | "abandoned" | ...
    Message: str
    TaskId: str | None = None
    TaskType: str | None = None
    Subject: str | None = None  # what the task was about, e.g. the instance name
    Data: dict[str, Any] = Field(default_factory=dict)


class EventLog(Protocol):
    def record(self, event: Event) -> bool:
        """Store it; False (nothing written) if its EventId exists already."""

    def list_events(self, *, task_id: str | None = None, limit: int = 100) -> list[Event]:
        """Newest first; [] when limit <= 0."""

    def close(self) -> None: ...
