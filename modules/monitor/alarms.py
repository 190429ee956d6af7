"""The monitor's second queue: system alarms (rollback failures, dead letters) are stored, logged
and, when BATON_MONITOR_WEBHOOK_URL is set, sent to a webhook (see webhook.py)."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from common.errors import BatonError
from common.masking import masked_alarm
from common.engine.document import Alarm, BackoffPolicy, Task
from common.queues import ALARM_QUEUE
from common.runtime.module import Consumers
from common.settings import Settings
from common.store.port import TaskStore
from modules.monitor.settings import MonitorSettings, load_monitor_settings
from modules.monitor.webhook import WebhookNotifier, WebhookPolicy

log = structlog.get_logger(__name__)


def alarm_consumer(_settings: Settings, store: TaskStore) -> Consumers:
    notifier = webhook_notifier(load_monitor_settings())

    def receive(body: bytes) -> None:
        alarm = Alarm.model_validate_json(body)  # a malformed alarm raises: it is dead-lettered
        # Scrubbed once, here, with its task's secrets: then the store, the log line and the
        # webhook all get the same safe text (whoever raised it may not have scrubbed it).
        alarm = masked_alarm(alarm, _task_of(store, alarm))
        # Only a newly stored alarm is logged and sent: a redelivered one was handled already.
        if store.add_alarm(alarm):
            log.error("ALARM", kind=alarm.Kind, alarm_id=alarm.AlarmId, task_id=alarm.TaskId,
                      step=alarm.Cursor, message=alarm.Message)
            if notifier is not None:
                notifier.notify(alarm)

    return Consumers({ALARM_QUEUE: receive}, notifier.stop if notifier is not None else lambda: None)


def _task_of(store: TaskStore, alarm: Alarm) -> Task | None:
    """The task an alarm is about, for its secrets; None when there is none or it cannot be read
    (URL passwords and secret-looking keys are still masked)."""
    if alarm.TaskId is None:
        return None
    try:
        return store.get(alarm.TaskId)
    except BatonError:  # unreadable, or the store is down: a StoreError would only requeue
        return None


def webhook_notifier(settings: MonitorSettings) -> WebhookNotifier | None:
    if settings.webhook_url is None:
        return None
    policy = WebhookPolicy(
        url=settings.webhook_url.get_secret_value(),
        timeout=settings.webhook_timeout_seconds,
        attempts=settings.webhook_attempts,
        backoff=BackoffPolicy(Initial=settings.webhook_backoff_seconds, Max=30.0, Multiplier=2.0, Jitter=0.2),
        queue_size=settings.webhook_queue_size,
    )
    notifier = WebhookNotifier(policy)
    notifier.start()
    return notifier
