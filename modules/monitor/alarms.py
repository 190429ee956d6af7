"""The monitor's second queue: system alarms (rollback failures, dead letters) are stored, logged
and, when BATON_MONITOR_WEBHOOK_URL is set, sent to a webhook (see webhook.py)."""

from __future__ import annotations


import structlog

from common.errors import BatonError
from common.secrets.task_views import masked_alarm
from common.engine.document import Alarm, Task
from common.queues import ALARM_QUEUE
from common.runtime.module import Consumers
from common.settings import Settings
from common.store.tasks.port import TaskStore
from modules.monitor.settings import MonitorSettings, load_monitor_settings
from common.relay.webhook_sender import SenderConfig
from modules.monitor.webhook import AlarmWebhook

log = structlog.get_logger(__name__)


def alarm_consumer(settings: Settings, store: TaskStore) -> Consumers:
    notifier = alarm_webhook(settings, load_monitor_settings(), store)

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


def alarm_webhook(settings: Settings, monitor: MonitorSettings, store: TaskStore) -> AlarmWebhook | None:
    """The monitor's URL and timeout; the signing key, backoff and late alarm of every webhook."""
    if monitor.webhook_url is None:
        return None
    secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else None
    config = SenderConfig(secret, monitor.webhook_timeout_seconds, settings.webhook_backoff_max_seconds,
                          settings.webhook_alarm_seconds)
    return AlarmWebhook(monitor.webhook_url.get_secret_value(), store, config)
