"""A task's event stream (`GET /tasks/{id}/events`, Server-Sent Events), read across reconnects.

The server sends each change of the task's history (`change`), then the task itself (`task`,
with an id "<version>.<history length>"), a step's item counts while its items run
(`progress`), and `end` once the task has ended. A client that reconnects with the last `task`
id it saw (`Last-Event-ID`) gets what came after it. So the changes are handed over only with
the `task` event that closes their batch: a connection lost between a change and its `task`
drops the batch, and the server sends it again after the reconnect. Each change is seen once.

Everything here is pure: lines of the stream in, events out; the clients do the I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from baton_client.call import Call, segment
from baton_client.errors import Conflict
from baton_client.models.task import HistoryEvent, TaskDetail, TaskStatus

LONGEST_STREAM_SECONDS = 3600.0  # the longest `timeout` the server takes for one connection


@dataclass(frozen=True)
class Change:
    """One event of the task's history: claimed, step_succeeded, cancelled..."""

    event: HistoryEvent


@dataclass(frozen=True)
class TaskShown:
    """The task after the changes before it. `event_id` resumes the stream after this point
    (events(task_id, last_event_id=...)), in this process or another."""

    task: TaskDetail
    event_id: str


@dataclass(frozen=True)
class Progress:
    """A for_each step whose items run: how many are in each state (states with none left out)."""

    step: int
    name: str
    item_count: int | None
    item_counts: dict[str, int]


@dataclass(frozen=True)
class Ended:
    """The task has ended (and owes nothing more): the stream's last event."""

    status: TaskStatus


TaskEvent = Change | TaskShown | Progress | Ended


class SseParser:
    """Server-Sent Events from lines (without their line ends), per the HTML standard: fields
    until a blank line, `data` lines joined by newlines, comments (`:`) ignored."""

    def __init__(self) -> None:
        self._kind, self._id, self._data = "", "", []  # type: tuple[str, str, list[str]]

    def feed(self, line: str) -> tuple[str, str, str] | None:
        """The (event, id, data) a blank line completes; None otherwise."""
        if not line:
            done = (self._kind or "message", self._id, "\n".join(self._data)) if self._data else None
            self._kind, self._data = "", []  # the id stays: the standard's "last event ID"
            return done
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self._kind = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        return None


@dataclass
class EventFollower:
    """Where a reader of one task's stream stands: the last `task` id it handed over, and the
    changes waiting for theirs."""

    last_event_id: str | None = None
    ended: bool = False
    _parser: SseParser = field(default_factory=SseParser)
    _changes: list[Change] = field(default_factory=list)

    def headers(self) -> dict[str, str]:
        return {"Accept": "text/event-stream", **({"Last-Event-ID": self.last_event_id} if self.last_event_id else {})}

    def reconnecting(self) -> None:
        """A new connection: the changes not closed by a `task` event come again."""
        self._parser, self._changes = SseParser(), []

    def feed(self, line: str) -> list[TaskEvent]:
        completed = self._parser.feed(line)
        if completed is None:
            return []
        kind, event_id, data = completed
        return self._event(kind, event_id, json.loads(data))

    def _event(self, kind: str, event_id: str, data: Any) -> list[TaskEvent]:
        if kind == "change":
            self._changes.append(Change(HistoryEvent.model_validate(data)))
            return []
        if kind == "task":
            handed: list[TaskEvent] = [*self._changes, TaskShown(TaskDetail.model_validate(data), event_id)]
            self._changes, self.last_event_id = [], event_id
            return handed
        if kind == "progress":
            return [Progress(data["Step"], data["Name"], data.get("ItemCount"), dict(data.get("ItemCounts") or {}))]
        if kind == "end":
            if "error" in data:  # the task's stored document broke meanwhile (an alarm names it)
                raise Conflict(f"the task can no longer be read: {data.get('reason', '')}".rstrip(": "),
                               code=str(data["error"]))  # fmt: skip
            self.ended = True
            return [Ended(TaskStatus(data["TaskStatus"]))]
        return []  # `timeout`: the server closes this connection; the reader opens another


def stream_call(task_id: str, remaining: float | None) -> Call[str]:
    """One connection of the stream; `remaining`: seconds left of the caller's timeout."""
    return Call("GET", f"/api/v1/tasks/{segment(task_id)}/events", str,
                params={"timeout": stream_seconds(remaining)}, safe=True)  # fmt: skip


def stream_seconds(remaining: float | None) -> float:
    """The `timeout` to ask the server for on one connection: what is left of the caller's (a
    tenth of a second at least), at most the server's longest."""
    if remaining is None:
        return LONGEST_STREAM_SECONDS
    return max(0.1, min(LONGEST_STREAM_SECONDS, round(remaining, 1)))


def reconnect_pause(delay: float, deadline: float | None, now: float) -> float:
    """The retry's delay before the next connection, cut at the caller's deadline (which the
    next look then finds passed: WaitTimeout, not a sleep past it)."""
    return delay if deadline is None else max(0.0, min(delay, deadline - now))
