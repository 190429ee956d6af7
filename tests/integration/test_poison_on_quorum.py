"""Quorum queues: a step message handed out as often as BATON_QUEUE_DELIVERY_LIMIT allows
without being settled is set aside by the module, with a dead-letter alarm naming its task,
instead of being run once more (real RabbitMQ, real module runtime)."""

from __future__ import annotations

import threading

import pytest

from common.broker.rabbitmq import RabbitBroker
from common.flows import parse_flows
from common.queues import ALARM_QUEUE, dead_letter_queue, module_queue
from common.runtime.module import ModuleRuntime
from common.settings import load_settings
from common.store.sqlite.tasks import SqliteStore
from modules.monitor.alarms import alarm_consumer
from oss.services.tasks import TaskService
from tests.support.cluster import STATE_DEADLINE, wait_until

pytestmark = pytest.mark.rabbitmq

FLOWS = """
version: 1
task_types:
  plain:
    steps:
      - name: only
        normal: {module: mysql, command: noop, timeout: 3, retry: 0}
"""


def test_the_last_allowed_delivery_is_dead_lettered_with_an_alarm(rabbitmq_url, tmp_path, monkeypatch):
    monkeypatch.delenv("BATON_MONITOR_WEBHOOK_URL", raising=False)
    store = SqliteStore(str(tmp_path / "baton.db"))
    settings = load_settings(concurrency=1, lease_seconds=5, queue_type="quorum", queue_delivery_limit=1)
    broker = RabbitBroker(rabbitmq_url, **settings.broker_options)
    service = TaskService(store, broker, parse_flows(FLOWS, "flows.yaml"), settings)
    runtime = None
    try:
        for queue in (module_queue("mysql"), ALARM_QUEUE):
            broker.declare(queue)
        task = service.submit("plain", {}).task
        # A consumer that goes away holding it (as one a poison message killed): it goes back to
        # the queue, counted as a delivery not settled.
        held = threading.Event()
        first = broker.subscribe(module_queue("mysql"), lambda _delivery: held.set(), prefetch=1)
        assert held.wait(STATE_DEADLINE)
        first.stop()

        runtime = ModuleRuntime(registry_ref="modules.mysql.commands:registry", settings=settings, store=store,
                                broker=broker, extra_consumers=alarm_consumer(settings, store))
        runtime.start()
        wait_until(lambda: [a for a in store.list_alarms(limit=100) if a.Kind == "dead_letter"], 30, "poison alarm")
        (alarm,) = [a for a in store.list_alarms(limit=100) if a.Kind == "dead_letter"]
        assert alarm.TaskId == task.TaskId and "poison message: handed out 2 times" in alarm.Message
        wait_until(lambda: broker.queue_depth(dead_letter_queue("mysql")) == 1, 15, "the message in the twin")
        assert store.get(task.TaskId).Steps[0].Attempts == 0  # never run
    finally:
        if runtime is not None:
            runtime.stop(grace=1)
        service.close()
        broker.close()
        store.close()
