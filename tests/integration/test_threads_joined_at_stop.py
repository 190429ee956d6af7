"""Every background thread a process starts ends by the time its stop sequence returns, before
its stores close: OSS's app (sweeper, relay timers, webhook deliveries, reconciler, schedules,
retention jobs) and a module's runtime (workers, hold-limit watcher, leases, announcements,
command refills, the monitor's alarm webhook), on the real RabbitMQ, SQLite and MariaDB. A new
thread that is not joined makes this fail."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from common.broker.factory import open_broker
from common.engine.document import Alarm
from common.queues import ALARM_QUEUE
from common.flows import load_flows
from common.runtime.module import ModuleRuntime
from common.store.factory import open_store
from common.store.side_stores import open_module_registry
from modules.monitor.alarms import alarm_consumer
from oss.api import create_app
from oss.settings import load_oss_settings
from tests.support.cluster import wait_until
from tests.support.mariadb import Sandbox, mariadb_sandbox
from tests.support.ports import free_port

pytestmark = [pytest.mark.rabbitmq]

FLOWS = """
version: 1
task_types:
  one:
    steps:
      - name: one
        normal: {module: mysql, command: noop, timeout: 300}
"""


@pytest.fixture
def sandbox(monkeypatch) -> Iterator[Sandbox]:
    with mariadb_sandbox() as box:
        for name, value in box.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("BATON_MONITOR_WEBHOOK_URL", f"http://127.0.0.1:{free_port()}/alarms")
        yield box


def ours(threads: set[threading.Thread]) -> list[str]:
    return sorted(t.name for t in threads if t.is_alive())


def test_no_background_thread_outlives_the_stop_sequence(tmp_path, rabbitmq_url, sandbox, monkeypatch) -> None:
    flows = tmp_path / "flows.yaml"
    flows.write_text(FLOWS)
    store_url = f"sqlite:///{tmp_path / 'baton.db'}"
    monkeypatch.setenv("BATON_RESOURCE_CLAIM_RETENTION_DAYS", "1")  # the resource module's: its retention job runs too
    settings = load_oss_settings(
        store_url=store_url, broker_url=rabbitmq_url, flows_path=str(flows), api_tokens="ops:threads-test-token-1:operator",
        sweep_interval_seconds=0.05, relay_grace_seconds=0.1, reconcile_interval_seconds=0.05, reconcile_apply=True,
        task_history_retention_days=1, shutdown_grace_seconds=2,
        webhook_url=f"http://127.0.0.1:{free_port()}/hook", module_heartbeat_seconds=0.2, concurrency=2,
    )  # fmt: skip
    before = set(threading.enumerate())
    store = open_store(store_url)
    broker = open_broker(rabbitmq_url)
    runtime = ModuleRuntime(
        registry_ref="modules.mysql.commands:registry", settings=settings, store=store, broker=broker,
        extra_consumers=alarm_consumer(settings, store), announce_to=open_module_registry(store_url),
    )  # fmt: skip
    runtime.start()
    app = create_app(settings, flows=load_flows(flows))
    with TestClient(app) as client:
        answer = client.post("/api/v1/tasks", json={"task_type": "one", "parameters": {}},
                             headers={"Authorization": "Bearer threads-test-token-1"})  # fmt: skip
        assert answer.status_code in (200, 201, 202), answer.text
        task_id = answer.json()["task_id"] if "task_id" in answer.json() else answer.json()["TaskId"]
        wait_until(lambda: store.get(task_id).TaskStatus.name == "SUCCESS", 60, "the task done")
        # An alarm for the monitor's webhook (its receiver is down), so its sender's worker runs.
        alarm = Alarm(AlarmId="threads-test-alarm", Kind="dead_letter", Time=time.time(), Message="for the test")
        broker.publish(ALARM_QUEUE, alarm.model_dump_json().encode(), message_id=alarm.AlarmId)
        for name in ("baton-sweeper", "baton-reconciler", "baton-webhooks", "baton-watch", "baton-lease",
                     "baton-announce", "baton-alarm-webhook"):  # the stop below has real threads to stop
            # A webhook sender starts its workers (`<name>-0`, ...) when it has something to send.
            wait_until(lambda: any(t == name or t.startswith(f"{name}-") for t in ours(set(threading.enumerate()) - before)),
                       60, f"{name} running")
    runtime.stop(grace=2)
    broker.close()
    store.close()
    left = ours(set(threading.enumerate()) - before)
    assert left == [], f"threads still running after the stop sequence: {left}"
