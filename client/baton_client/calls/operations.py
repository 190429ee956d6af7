"""Operations over many tasks (bulk actions, migrations) and the alarms.

A bulk action and a migration are dry runs unless `dry_run=False`: the dry run says exactly
what would change; the same call with `dry_run=False` applies it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from baton_client.call import Call, endpoint, segment
from baton_client.calls.tasks import status_filter
from baton_client.models.operations import AlarmList, AlarmsAcknowledged, AlarmView, BulkOutcome, MigrationOutcome
from baton_client.models.requests import AcknowledgeAlarms, AlarmFilter, BulkAction, Migration, Moment
from baton_client.models.task import TaskStatus

BulkName = Literal["cancel", "retry", "retry-rollback", "pause", "resume"]


class OperationCalls:
    @endpoint
    def bulk(
        action: BulkName, reason: str, *, dry_run: bool = True, limit: int = 1000, task_type: str | None = None,
        status: TaskStatus | int | str | None = None, user_id: str | None = None,
        labels: Mapping[str, str] | None = None, created_from: Moment | None = None,
        created_to: Moment | None = None,
    ) -> Call[BulkOutcome]:  # fmt: skip
        """An operator action on every task the filter selects (at least one filter), newest
        first, up to `limit`: `applied` lists the tasks it fits (or changed), `refused` the
        others and why."""
        body = BulkAction(reason=reason, dry_run=dry_run, limit=limit, task_type=task_type,
                          status=status_filter(status), user_id=user_id, labels=dict(labels or {}),
                          created_from=created_from, created_to=created_to)  # fmt: skip
        return Call("POST", f"/api/v1/bulk/{segment(action)}", BulkOutcome, body=body, safe=dry_run)

    @endpoint
    def migrate(task_type: str, to: str, reason: str, *, dry_run: bool = True, limit: int = 1000) -> Call[MigrationOutcome]:
        """Move the type's tasks in flight to the revision the service runs (`to`: its
        `version` or content hash, see get_task_type). Conflict if `to` names another."""
        body = Migration(to=to, reason=reason, dry_run=dry_run, limit=limit)
        return Call("POST", f"/api/v1/task-types/{segment(task_type)}/migrate", MigrationOutcome,
                    body=body, safe=dry_run)  # fmt: skip

    @endpoint
    def list_alarms(*, acknowledged: bool | None = None, limit: int = 100) -> Call[list[AlarmView]]:
        """Alarms, newest first, each with its task's current status."""
        return Call("GET", "/api/v1/alarms", AlarmList, unwrap="items",
                    params={"acknowledged": acknowledged, "limit": limit}, safe=True)  # fmt: skip

    @endpoint
    def acknowledge_alarm(alarm_id: str) -> Call[AlarmView]:
        """Record who acknowledged it and when; again keeps the first record (so it is retried)."""
        return Call("POST", f"/api/v1/alarms/{segment(alarm_id)}/ack", AlarmView, safe=True)

    @endpoint
    def acknowledge_alarms(
        reason: str, *, ids: Sequence[str] = (), kind: str | None = None, task_id: str | None = None,
    ) -> Call[AlarmsAcknowledged]:  # fmt: skip
        """The alarms named in `ids`, and every open one of that `kind` and/or `task_id` (500
        at most per call), each with the reason. Repeating it changes nothing more."""
        wanted = AlarmFilter(kind=kind, task_id=task_id) if kind is not None or task_id is not None else None
        body = AcknowledgeAlarms(ids=list(ids), filter=wanted, reason=reason)
        return Call("POST", "/api/v1/alarms/acknowledge", AlarmsAcknowledged, body=body, safe=True)
