"""What bulk actions, migrations and alarms answer."""

from __future__ import annotations

from pydantic import Field

from baton_client.models._base import Answer


class Refused(Answer):
    task_id: str
    reason: str


class BulkOutcome(Answer):
    action: str
    dry_run: bool
    matched: int = Field(description="Tasks the filter selected (up to the limit)")
    applied: list[str] = Field(description="Dry run: the tasks the action fits; else: the tasks it changed")
    refused: list[Refused] = Field(description="Tasks whose state does not fit the action, and why")
    truncated: bool = Field(description="More tasks match than `limit`")


class Refusal(Answer):
    task_id: str
    reason: str


class MigrationOutcome(Answer):
    task_type: str
    to_hash: str
    to_version: str | None
    dry_run: bool
    matched: int
    moved: list[str] = Field(description="Dry run: the tasks that would move; else: the tasks moved")
    current: list[str] = Field(description="Tasks on that revision already")
    refused: list[Refusal] = Field(description="Tasks that cannot move without doubt, and why")
    truncated: bool


class AlarmView(Answer):
    """An alarm (`Kind`: rollback_failed, dead_letter...), with its task's current status."""

    AlarmId: str
    Kind: str
    Time: float
    Message: str
    TaskId: str | None = None
    Cursor: int | None = None
    Phase: int | None = None
    Module: str | None = None
    Command: str | None = None
    Acknowledged: bool = False
    AcknowledgedBy: str | None = None
    AcknowledgedAt: float | None = None
    AcknowledgedReason: str | None = None
    TaskStatus: int | None = None
    TaskStatusName: str | None = None


class AlarmList(Answer):
    items: list[AlarmView]


class AlarmsAcknowledged(Answer):
    acknowledged: list[str] = Field(description="The alarms this request acknowledged")
    already: list[str] = Field(description="Acknowledged before, left as they were")
    unknown: list[str] = Field(description="Ids of no alarm")


class CallbackAccepted(Answer):
    """A callback taken: its action, and the wait now (waiting, kept, succeeded, failed, running)."""

    accepted: str
    state: str
