"""System alarms the monitor received (failed rollbacks, dead letters), and acknowledging one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from common.masking import masked_alarm
from common.models import Alarm
from oss.api.auth import Context, Operator, Reader
from oss.api.errors import ApiError
from oss.api.schemas import AlarmList, error_responses

router = APIRouter(prefix="/api/v1", tags=["alarms"])


@router.get("/alarms", response_model=AlarmList, summary="Alarms, newest first",
            responses=error_responses(401, 422, 503))  # fmt: skip
def list_alarms(
    context: Context,
    token: Reader,
    acknowledged: Annotated[bool | None, Query(description="Only (un)acknowledged ones")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> AlarmList:
    alarms = context.store.list_alarms(acknowledged=acknowledged, limit=limit)
    return AlarmList(items=[_shown(context, alarm) for alarm in alarms])


@router.post("/alarms/{alarm_id}/ack", response_model=Alarm, summary="Acknowledge an alarm",
             responses=error_responses(401, 403, 404, 422, 503))  # fmt: skip
def acknowledge_alarm(alarm_id: str, context: Context, token: Operator) -> Alarm:
    """Records who acknowledged it and when; acknowledging again keeps the first record."""
    alarm = context.store.acknowledge_alarm(alarm_id, by=token.name, now=context.clock())
    if alarm is None:
        raise ApiError(404, f"no alarm {alarm_id}")
    return _shown(context, alarm)


def _shown(context: Context, alarm: Alarm) -> Alarm:  # type: ignore[valid-type]
    task = context.store.get(alarm.TaskId) if alarm.TaskId else None
    return masked_alarm(alarm, task)
