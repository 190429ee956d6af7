"""The task view of a task whose for_each step keeps its items in records (DESIGN.md 12): run by
the real module runtime on the in-process broker, the task succeeds, its document stays small
(no items in it, however many), and GET /tasks/{id} answers with the step's outcome."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient

from common.engine.kinds import fan_out
from common.engine.kinds.fan_out import keeps_records
from common.engine.states import FINAL_STATUSES, TaskStatus
from common.queues import module_queue
from common.runtime.module import ModuleRuntime
from common.settings import load_settings
from tests.api.support import auth, open_api

FLOWS = """
version: 1
task_types:
  wide:
    parameters:
      nodes: {type: array, required: true}
    steps:
      - name: each
        for_each: nodes
        max_parallel: 8
        normal:   {module: prop, command: n0}
        rollback: {module: prop, command: u0}
"""
ITEMS = 60


def test_a_step_over_records_is_shown_with_its_outcome_and_no_items(tmp_path, monkeypatch):
    monkeypatch.setattr(fan_out, "RECORDS_ENABLED", True)
    app, store, broker = open_api(tmp_path, flows=FLOWS)
    broker.declare(module_queue("prop"))
    runtime = ModuleRuntime(registry_ref="tests.support.property_commands:registry",
                            settings=load_settings(concurrency=4, store_url=f"sqlite:{tmp_path / 'api.db'}"),
                            store=store, broker=broker)
    runtime.start()
    try:
        with TestClient(app) as client:
            created = client.post("/api/v1/tasks", json={"task_type": "wide", "parameters": {"nodes": list(range(ITEMS))}},
                                  headers=auth())
            assert created.status_code == 201, created.text
            task_id = created.json()["task_id"]
            deadline = time.monotonic() + 120
            while store.get(task_id).TaskStatus not in FINAL_STATUSES:
                assert time.monotonic() < deadline, "the task did not end"
                time.sleep(0.1)
            stored = store.get(task_id)
            assert stored.TaskStatus is TaskStatus.SUCCESS
            assert keeps_records(stored.Steps[0]) and stored.Steps[0].Items is None
            assert len(stored.Parameters["each"]) == ITEMS  # the outputs, gathered in item order
            assert len(stored.History) < 20  # the items' events are in their records
            shown = client.get(f"/api/v1/tasks/{task_id}", headers=auth())
            assert shown.status_code == 200, shown.text
            step = shown.json()["Steps"][0]
            assert step["State"] == "succeeded" and step["ItemCount"] == ITEMS and not step.get("Items")
            assert step["Code"] == 0 and step["TimeEnd"] is not None
    finally:
        runtime.stop(grace=2)
        broker.close()
        store.close()
