"""`baton_tasks_finished_total` counts a task's end once, in the process whose write ended it,
wherever it ends: an operator's cancel over REST, an approval's rejection, an end after a skip
(OSS's /metrics), a sweeper's timeout (the sweeper's registry). A repeat that is refused counts
nothing. docs/reference/metrics.md."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from common.engine.states import TaskStatus
from common.metrics import RuntimeMetrics
from common.relay.sweeper import SweepConfig, Sweeper
from common.store.sqlite.tasks import SqliteStore
from tests.api.support import FLOWS, SUBMITTER, Api, auth, open_api

MORE = """
  guarded:
    steps:
      - name: ask
        approve: {count: 1}
  hurried:
    deadline: 60
    steps:
      - name: only
        normal: {module: resource, command: check_resource}
"""


@pytest.fixture
def api(tmp_path) -> Iterator[Api]:
    app, store, broker = open_api(tmp_path, flows=FLOWS.rstrip("\n") + "\n" + MORE.lstrip("\n"))
    with TestClient(app) as client:
        yield Api(client, store, broker)
    store.close()
    broker.close()


def finished(text: str, task_type: str, status: str) -> float:
    found = re.search(rf'^baton_tasks_finished_total{{status="{status}",task_type="{task_type}"}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_operator_actions_that_end_a_task_count_once_on_oss_metrics(api: Api) -> None:
    cancelled = api.create()["task_id"]
    assert api.act(cancelled, "cancel", "wrong host").status_code == 200
    assert api.store.get(cancelled).TaskStatus is TaskStatus.ROLLED_BACK  # its step was only dispatched
    assert api.act(cancelled, "cancel", "again").status_code == 409  # refused: nothing more counted

    rejected = api.client.post("/api/v1/tasks", json={"task_type": "guarded", "parameters": {}},
                               headers=auth(SUBMITTER)).json()["task_id"]  # fmt: skip
    answer = api.client.post(f"/api/v1/tasks/{rejected}/steps/ask/actions/reject", json={"reason": "no"},
                             headers=auth())  # fmt: skip
    assert answer.status_code == 200 and api.store.get(rejected).TaskStatus is TaskStatus.ROLLED_BACK

    skipped = api.rolled_back()  # step 1 failed; ROLLED_BACK, counted by the write that ended it
    assert api.client.post(f"/api/v1/tasks/{skipped}/skip", json={"reason": "by hand", "step": 1},
                           headers=auth()).status_code == 200  # fmt: skip
    api.step(skipped)  # step 0 again, as a module in this process would write it
    assert api.store.get(skipped).TaskStatus is TaskStatus.SUCCESS
    text = api.client.get("/metrics").text
    assert finished(text, "create_db", "ROLLED_BACK") == 2.0, text  # the cancel, and the first end of `skipped`
    assert finished(text, "guarded", "ROLLED_BACK") == 1.0, text
    assert finished(text, "create_db", "SUCCESS") == 1.0, text


def test_a_sweeper_timeout_is_counted_by_the_sweeper_that_ended_the_task(api: Api, tmp_path) -> None:
    task_id = api.create("hurried", parameters={})["task_id"]
    store = SqliteStore(tmp_path / "api.db")  # the sweeper's own process: its own store and registry
    metrics = RuntimeMetrics()
    sweeper = Sweeper(store, api.broker, SweepConfig(lease=30, redeliver_after=60, relay_grace=5, interval=1),
                      clock=lambda: time.time() + 3600, metrics=metrics)  # fmt: skip
    try:
        sweeper.sweep_once()
        sweeper.sweep_once()
    finally:
        sweeper.close()
        store.close()
    assert api.store.get(task_id).TaskStatus is TaskStatus.ROLLED_BACK
    count = metrics.registry.get_sample_value("baton_tasks_finished_total",
                                              {"task_type": "hurried", "status": "ROLLED_BACK"})  # fmt: skip
    assert count == 1.0
    assert finished(api.client.get("/metrics").text, "hurried", "ROLLED_BACK") == 0.0  # not OSS's: once
