"""A secret parameter's value never reaches a module's log, even inside a command's error text."""

from __future__ import annotations

import pytest

from common.broker.inprocess import InProcessBroker
from common.flows import parse_flows
from common.logging import configure_logging
from common.queues import module_queue
from common.runtime.module import ModuleRuntime
from common.settings import load_settings
from common.engine.states import FINAL_STATUSES, TaskStatus
from common.store.sqlite.tasks import SqliteStore
from oss.services.tasks import TaskService
from tests.support.cluster import wait_until

FLOWS = """
version: 1
task_types:
  login:
    parameters:
      admin_password: {type: string, secret: true, required: true}
    steps:
      - name: connect
        normal: {module: leaky, command: connect, timeout: 300, retry: 0}
"""
SECRET = "hunter2-correct-horse"


@pytest.fixture
def json_logs():
    configure_logging("json", "debug")
    yield
    configure_logging()  # back to the defaults for the tests that follow


def test_secret_values_are_masked_in_step_log_lines(tmp_path, capfd, json_logs):
    store = SqliteStore(str(tmp_path / "baton.db"))
    broker = InProcessBroker()
    settings = load_settings(concurrency=1)
    broker.declare(module_queue("leaky"))
    service = TaskService(store, broker, parse_flows(FLOWS, "flows.yaml"), settings)
    runtime = ModuleRuntime(registry_ref="tests.support.leaky_commands:registry", settings=settings, store=store, broker=broker)
    runtime.start()
    try:
        task = service.submit("login", {"admin_password": SECRET}).task
        wait_until(lambda: store.get(task.TaskId).TaskStatus in FINAL_STATUSES, 15, "final")
    finally:
        runtime.stop(grace=1)
        service.close()
        broker.close()
        store.close()
    done = SqliteStore(str(tmp_path / "baton.db")).get(task.TaskId)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK
    # Stored scrubbed: no reader of the document (a search, a listing) can see or match it.
    assert done.Steps[0].Message == "login refused for password ***"
    stored = done.model_dump(mode="json")
    for kept in ("Parameters", "SubmittedParameters"):  # the commands need it there
        stored.pop(kept)
    assert SECRET not in str(stored)
    out, err = capfd.readouterr()
    logs = out + err
    assert "login refused for password ***" in logs  # the line is there, masked
    assert SECRET not in logs
