"""Building the parts a process needs from its settings, in one place."""

from __future__ import annotations

import time
from dataclasses import dataclass

from pydantic import SecretStr

from common.broker.factory import open_broker
from common.broker.port import Broker
from common.flows import FlowCatalog, load_flows
from common.module_hooks import module_hook, module_hooks
from common.relay.gate_reclaims import GateReclaims
from common.relay.outbox import OutboxPublisher, mark_delay_for
from common.settings import Settings
from common.relay.schedule_runner import ScheduleRunner
from common.store.factory import IndexMode, open_store
from common.store.side_stores import open_module_drains, open_module_registry, open_schedule_store
from common.store.tasks.port import TaskStore
from common.relay.sweeper import Job, SweepConfig, Sweeper
from common.relay.unserved import UnservedWatch
from common.relay.webhooks import WebhookConfig, WebhookDeliverer
from oss.services.claim_retention import ClaimRetention
from oss.services.history_retention import HistoryRetention
from oss.services.tasks import TaskService


@dataclass
class Parts:
    settings: Settings
    store: TaskStore
    broker: Broker
    flows: FlowCatalog
    service: TaskService

    def close(self) -> None:
        self.service.close()
        self.broker.close()
        self.store.close()


def build(settings: Settings, indexes: IndexMode = "none") -> Parts:
    """`indexes` (MongoDB): OSS-side processes that start for good pass "create" (the all-in-one
    demo) or "check" (the sweeper); a CLI command leaves them alone (common.store.mongo.indexes)."""
    flows = load_flows(settings.flows_path)
    store = open_store(settings.store_url, timeout_seconds=settings.effective_store_timeout, indexes=indexes)
    broker = open_broker(settings.broker_url, settings.broker_heartbeat_seconds, **settings.broker_options)
    service = TaskService(store, broker, flows, settings)
    return Parts(settings, store, broker, flows, service)


def build_sweeper(settings: Settings, store: TaskStore, broker: Broker, service: TaskService) -> Sweeper:
    """The sweeper with its jobs: the schedules' ticks create tasks through `service`."""
    config = SweepConfig(
        lease=settings.lease_seconds,
        redeliver_after=settings.redeliver_after_seconds,
        relay_grace=settings.relay_grace_seconds,
        interval=settings.sweep_interval_seconds,
    )
    # Its indexes are prepared with the task store's (every collection of the database).
    schedule_store = open_schedule_store(
        settings.store_url, timeout_seconds=settings.effective_store_timeout, indexes="none"
    )
    schedules = ScheduleRunner(schedule_store, store, service.submit, settings.schedule_misfire_grace_seconds)
    modules = open_module_registry(settings.store_url, timeout_seconds=settings.effective_store_timeout, indexes="none")
    drains = open_module_drains(settings.store_url, timeout_seconds=settings.effective_store_timeout, indexes="none")
    unserved = UnservedWatch(store, modules, broker, settings.unserved_alarm_seconds, settings.module_ttl, drains)
    reclaims = GateReclaims(OutboxPublisher(
        store, broker, time.time, mark_delay_for(settings.relay_grace_seconds),
        lease=settings.lease_seconds, redeliver_after=settings.redeliver_after_seconds,
    ))
    jobs: list[Job] = [schedules, unserved, reclaims]
    for resource in (load() for load in module_hooks("inventory_settings")):  # the resource module's
        if resource.claim_retention_seconds > 0:
            inventory = module_hook("inventory").open_configured_inventory(
                settings, resource, timeout_seconds=settings.effective_store_timeout, indexes="none"
            )
            jobs.append(ClaimRetention(inventory, resource.claim_retention_seconds))
    if settings.task_history_retention_days > 0:
        jobs.append(HistoryRetention(store, settings.task_history_retention_days * 86400))
    return Sweeper(store, broker, config, jobs=jobs, webhooks=WebhookDeliverer(store, webhook_config(settings)),
                   on_unclaimed_items=unserved.note_unclaimed_items)


def webhook_config(settings: Settings) -> WebhookConfig:
    def revealed(value: SecretStr | None) -> str | None:
        return value.get_secret_value() if value is not None else None

    return WebhookConfig(
        global_url=revealed(settings.webhook_url),
        secret=revealed(settings.webhook_secret),
        timeout=settings.webhook_timeout_seconds,
        backoff_max=settings.webhook_backoff_max_seconds,
        alarm_after=settings.webhook_alarm_seconds,
    )
