"""A step a module cannot act on is dead-lettered with an alarm that names its task whenever the
message does: an unreadable task document, or a message malformed past its TaskId."""

from __future__ import annotations

import json
import sqlite3

import pytest

from common.broker.inprocess import InProcessBroker
from common.flows import parse_flows
from common.queues import ALARM_QUEUE, dead_letter_queue, module_queue
from common.runtime.module import ModuleRuntime
from common.settings import load_settings
from common.store.sqlite.tasks import SqliteStore
from modules.monitor.alarms import alarm_consumer
from oss.services.tasks import TaskService
from tests.support.builders import nested
from tests.support.cluster import wait_until

FLOWS = """
version: 1
task_types:
  plain:
    steps:
      - name: only
        normal: {module: mysql, command: noop, timeout: 3, retry: 0}
"""


@pytest.fixture
def parts(tmp_path, monkeypatch):
    monkeypatch.delenv("BATON_MONITOR_WEBHOOK_URL", raising=False)
    store = SqliteStore(str(tmp_path / "baton.db"))
    broker = InProcessBroker()
    settings = load_settings(concurrency=1, lease_seconds=5)
    service = TaskService(store, broker, parse_flows(FLOWS, "flows.yaml"), settings)
    for queue in (module_queue("mysql"), ALARM_QUEUE):
        broker.declare(queue)
    runtime = ModuleRuntime(registry_ref="modules.mysql.commands:registry", settings=settings, store=store,
                            broker=broker, extra_consumers=alarm_consumer(settings, store))  # fmt: skip
    yield store, broker, service, runtime
    runtime.stop(grace=1)
    service.close()
    broker.close()
    store.close()


def alarms_of(store, kind):
    return [a for a in store.list_alarms(limit=100) if a.Kind == kind]


def test_a_step_of_an_unreadable_task_is_dead_lettered_with_an_alarm_naming_the_task(parts):
    store, broker, service, runtime = parts
    task = service.submit("plain", {}).task  # published; nobody consumes yet
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE tasks SET doc = json_set(doc, '$.Priority', 'high') WHERE task_id = ?", (task.TaskId,))
    runtime.start()
    wait_until(lambda: alarms_of(store, "dead_letter"), 15, "dead-letter alarm")
    (alarm,) = alarms_of(store, "dead_letter")
    assert alarm.TaskId == task.TaskId and alarm.Command == "noop" and "cannot be read" in alarm.Message
    assert [a.TaskId for a in alarms_of(store, "unreadable_task")] == [task.TaskId]
    assert broker.queue_depth(dead_letter_queue("mysql")) == 1


def test_a_message_malformed_past_its_task_id_still_names_the_task(parts):
    store, broker, _service, runtime = parts
    runtime.start()
    bodies = [{"TaskId": "task-with-bad-cursor", "Cursor": "first"},
              {"TaskId": "task-nested-too-deep", "Parameters": {"x": nested(300)}}]  # fmt: skip
    for body in bodies:
        broker.publish(module_queue("mysql"), json.dumps(body).encode())
    wait_until(lambda: len(alarms_of(store, "dead_letter")) == 2, 15, "two dead-letter alarms")
    assert {a.TaskId for a in alarms_of(store, "dead_letter")} == {"task-with-bad-cursor", "task-nested-too-deep"}
