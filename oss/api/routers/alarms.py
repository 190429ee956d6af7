"""System alarms the monitor received (failed rollbacks, dead letters), and acknowledging them:
one, or many at once with a reason (the console's multi-select)."""

from __future__ import annotations

from typing import Annotated

import structlog
from fastapi import APIRouter, Query

from common.errors import UnreadableTask
from common.secrets.free_text import masked_free_text
from common.engine.document import Alarm
from oss.api.access import sees
from oss.api.auth import Context, Operator, Reader
from oss.settings import ApiToken, Role
from oss.api.query import ASCII_INT
from oss.api.errors import ApiError
from oss.api.schemas import AcknowledgeAlarms, AlarmList, AlarmsAcknowledged, AlarmView, error_responses
from oss.api.views import alarm_view

router = APIRouter(prefix="/api/v1", tags=["alarms"])
log = structlog.get_logger(__name__)
BULK_LIMIT = 500  # alarms one bulk request may acknowledge by filter
SCOPED_SCAN = 5_000  # alarms a scoped token's request looks through for those of its tasks


@router.get("/alarms", response_model=AlarmList, summary="Alarms, newest first",
            responses=error_responses(401, 422, 503))  # fmt: skip
def list_alarms(
    context: Context,
    token: Reader,
    acknowledged: Annotated[bool | None, Query(description="Only (un)acknowledged ones")] = None,
    limit: Annotated[int, Query(ge=1, le=500), ASCII_INT] = 100,
) -> AlarmList:
    """Each with the current status of its task, if it names one. A token limited to namespaces
    sees the alarms of its tasks only (among the newest 5,000)."""
    if token.scope is None:
        alarms = context.store.list_alarms(acknowledged=acknowledged, limit=limit)
        return AlarmList(items=[_shown(context, alarm) for alarm in alarms])
    return AlarmList(items=[_shown(context, alarm) for alarm in _alarms_of(context, token, acknowledged)[:limit]])


@router.post("/alarms/acknowledge", response_model=AlarmsAcknowledged,
             summary="Acknowledge many alarms, with a reason",
             responses=error_responses(401, 403, 413, 422, 503))  # fmt: skip
def acknowledge_alarms(body: AcknowledgeAlarms, context: Context, token: Operator) -> AlarmsAcknowledged:
    """The alarms named in `ids`, and every open alarm `filter` matches (at most 500 of them
    per request: send it again for more). Each records who, when and the reason; an alarm
    acknowledged before keeps its first record."""
    if not body.ids and body.filter is None:
        raise ApiError(422, "the request is not valid", fields=[("ids", "name alarms, or give a filter")])
    ids = list(dict.fromkeys(body.ids))
    if body.filter is not None:
        wanted = body.filter
        found = (context.store.list_alarms(acknowledged=False, limit=BULK_LIMIT) if token.scope is None
                 else _alarms_of(context, token, False, "operator")[:BULK_LIMIT])  # fmt: skip
        for alarm in found:
            if wanted.kind not in (None, alarm.Kind) or wanted.task_id not in (None, alarm.TaskId):
                continue
            if alarm.AlarmId not in ids:
                ids.append(alarm.AlarmId)
    answer = AlarmsAcknowledged(acknowledged=[], already=[], unknown=[])
    now = context.clock()
    mine = None if token.scope is None else {a.AlarmId for a in _alarms_of(context, token, None, "operator")}
    for alarm_id in ids:
        if mine is not None and alarm_id not in mine:  # another namespace's: as if there were none
            answer.unknown.append(alarm_id)
            continue
        alarm = context.store.acknowledge_alarm(alarm_id, by=token.name, now=now, reason=masked_free_text(body.reason))
        if alarm is None:
            answer.unknown.append(alarm_id)
        elif alarm.AcknowledgedAt == now and alarm.AcknowledgedBy == token.name:
            answer.acknowledged.append(alarm_id)
        else:
            answer.already.append(alarm_id)
    # The reason is on each alarm; it is free text an operator typed, so it stays out of logs.
    log.info("alarms acknowledged", actor=token.name, count=len(answer.acknowledged))
    return answer


@router.post("/alarms/{alarm_id}/ack", response_model=AlarmView, summary="Acknowledge an alarm",
             responses=error_responses(401, 403, 404, 422, 503))  # fmt: skip
def acknowledge_alarm(alarm_id: str, context: Context, token: Operator) -> AlarmView:
    """Records who acknowledged it and when; acknowledging again keeps the first record."""
    if token.scope is not None and alarm_id not in {a.AlarmId for a in _alarms_of(context, token, None, "operator")}:
        raise ApiError(404, "no such alarm")  # another namespace's: the answer for an id that names none
    alarm = context.store.acknowledge_alarm(alarm_id, by=token.name, now=context.clock())
    if alarm is None:
        raise ApiError(404, "no such alarm")  # the id asked for is not echoed
    return _shown(context, alarm)


def _alarms_of(context: Context, token: ApiToken, acknowledged: bool | None, needed: Role = "read") -> list[Alarm]:
    """The alarms about a task the token sees (an alarm about no task is every team's concern:
    for unscoped tokens only). A task is read once however many alarms name it."""
    tasks: dict[str, bool] = {}
    found = []
    for alarm in context.store.list_alarms(acknowledged=acknowledged, limit=SCOPED_SCAN):
        if not alarm.TaskId:
            continue
        if alarm.TaskId not in tasks:
            try:
                tasks[alarm.TaskId] = sees(token, context.store.get(alarm.TaskId), needed)
            except UnreadableTask:  # its type and labels cannot be read: not shown as its
                tasks[alarm.TaskId] = False
        if tasks[alarm.TaskId]:
            found.append(alarm)
    return found


def _shown(context: Context, alarm: Alarm) -> AlarmView:
    try:
        task = context.store.get(alarm.TaskId) if alarm.TaskId else None
    except UnreadableTask:  # its own alarm says so; an unreadable task must not hide the list
        task = None
    return alarm_view(alarm, task)
