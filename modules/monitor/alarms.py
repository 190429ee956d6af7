"""The monitor's second queue: system alarms (rollback failures, dead letters) are stored and logged."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from common.models import Alarm
from common.queues import ALARM_QUEUE
from common.settings import Settings
from common.store.port import TaskStore

log = structlog.get_logger(__name__)


def alarm_consumer(_settings: Settings, store: TaskStore) -> dict[str, Callable[[bytes], None]]:
    def receive(body: bytes) -> None:
        alarm = Alarm.model_validate_json(body)  # a malformed alarm raises: it is dead-lettered
        if store.add_alarm(alarm):
            log.error("ALARM", kind=alarm.Kind, alarm_id=alarm.AlarmId, task_id=alarm.TaskId,
                      step=alarm.Cursor, message=alarm.Message)

    return {ALARM_QUEUE: receive}
