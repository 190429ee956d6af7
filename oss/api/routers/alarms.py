"""System alarms the monitor received (failed rollbacks, dead letters), and acknowledging them:
one, or many at once with a reason (the console's multi-select)."""

from __future__ import annotations

from typing import Annotated

import structlog
from fastapi import APIRouter, Query

from common.errors import UnreadableTask
from common.engine.document import Alarm
from oss.api.auth import Context, Operator, Reader
from oss.api.query import ASCII_INT
from oss.api.errors import ApiError
from oss.api.schemas import AcknowledgeAlarms, AlarmList, AlarmsAcknowledged, AlarmView, error_responses
from oss.api.views import alarm_view

router = APIRouter(prefix="/api/v1", tags=["alarms"])
log = structlog.get_logger(__name__)
BULK_LIMIT = 500  # alarms one bulk request may acknowledge by filter


@router.get("/alarms", response_model=AlarmList, summary="Alarms, newest first",
            responses=error_responses(401, 422, 503))  # fmt: skip
def list_alarms(
    context: Context,
    token: Reader,
    acknowledged: Annotated[bool | None, Query(description="Only (un)acknowledged ones")] = None,
    limit: Annotated[int, Query(ge=1, le=500), ASCII_INT] = 100,
) -> AlarmList:
    """Each with the current status of its task, if it names one."""
    alarms = context.store.list_alarms(acknowledged=acknowledged, limit=limit)
    return AlarmList(items=[_shown(context, alarm) for alarm in alarms])


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
        for alarm in context.store.list_alarms(acknowledged=False, limit=BULK_LIMIT):
            if wanted.kind not in (None, alarm.Kind) or wanted.task_id not in (None, alarm.TaskId):
                continue
            if alarm.AlarmId not in ids:
                ids.append(alarm.AlarmId)
    answer = AlarmsAcknowledged(acknowledged=[], already=[], unknown=[])
    now = context.clock()
    for alarm_id in ids:
        alarm = context.store.acknowledge_alarm(alarm_id, by=token.name, now=now, reason=body.reason)
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
    alarm = context.store.acknowledge_alarm(alarm_id, by=token.name, now=context.clock())
    if alarm is None:
        raise ApiError(404, "no such alarm")  # the id asked for is not echoed
    return _shown(context, alarm)


def _shown(context: Context, alarm: Alarm) -> AlarmView:
    try:
        task = context.store.get(alarm.TaskId) if alarm.TaskId else None
    except UnreadableTask:  # its own alarm says so; an unreadable task must not hide the list
        task = None
    return alarm_view(alarm, task)
