"""A long task keeps a bounded document and loses no history (DESIGN.md 8.2): a
`for_each` over 120 items, run by the real module runtime on the in-process broker, ends with at
most 100 events in its stored document, while the API's view (and the SSE stream's ids) still
count and show every event, and every item's attempt."""

from __future__ import annotations
import pytest

import time

from fastapi.testclient import TestClient

from common.engine.history import HISTORY_LIMIT
from common.queues import module_queue
from common.runtime.module import ModuleRuntime
from common.settings import load_settings
from common.engine.states import FINAL_STATUSES, TaskStatus
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
ITEMS = 120


@pytest.mark.usefixtures("inline_items")
def test_a_task_of_many_events_keeps_a_bounded_document_and_shows_all_of_them(tmp_path):
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
            assert len(stored.History) <= HISTORY_LIMIT and stored.HistoryArchived > 0
            shown = client.get(f"/api/v1/tasks/{task_id}", headers=auth()).json()
            assert len(shown["History"]) == stored.history_count > 3 * ITEMS  # dispatched, claimed, succeeded
            claimed_items = {e["Item"] for e in shown["History"] if e["Event"] == "claimed"}
            assert claimed_items == set(range(ITEMS))  # the oldest items' events too
            assert len([a for a in shown["Attempts"] if a.get("Item") is not None]) == ITEMS
            with client.stream("GET", f"/api/v1/tasks/{task_id}/events", headers=auth()) as stream:
                text = "".join(stream.iter_text())
            assert text.count("event: change") == stored.history_count
            assert f"id: {stored.Version}.{stored.history_count}" in text
    finally:
        runtime.stop(grace=2)
        broker.close()
        store.close()
