"""Freeze windows at the API's edge, in process: a schedule's tick in a refusing window is
skipped with the window named in its `LastError`, in a waiting window its task waits; a repeat of
an idempotency key that created a task before the window opened still answers with that task."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from common.engine.codes import WaitKind
from common.relay.schedule_runner import ScheduleRunner
from common.store.side_stores import open_schedule_store
from tests.api.support import FLOWS, Api, auth, open_api

ALWAYS_OPEN = """
freeze:
  - {name: change_freeze, cron: "0 0 * * *", duration: 24h, task_types: [create_db], policy: refuse}
  - {name: maintenance, cron: "0 0 * * *", duration: 24h, task_types: [free_form], policy: wait}
"""


@pytest.fixture
def api(tmp_path) -> Iterator[Api]:
    app, store, broker = open_api(tmp_path, flows=FLOWS + ALWAYS_OPEN)
    with TestClient(app) as client:
        yield Api(client, store, broker)
    store.close()
    broker.close()


def run_tick(api: Api, task_type: str, parameters: dict) -> dict:
    body = {"name": f"pulse_{task_type}", "task_type": task_type, "parameters": parameters, "interval_seconds": 60}
    schedule = api.client.post("/api/v1/schedules", json=body, headers=auth())
    assert schedule.status_code == 201, schedule.text
    context = api.client.app.state.baton  # type: ignore[attr-defined]
    schedules = open_schedule_store(context.settings.store_url)
    try:
        ScheduleRunner(schedules, api.store, context.service.submit, 60).run_due(schedule.json()["NextAt"] + 1)
    finally:
        schedules.close()
    return api.get(f"/api/v1/schedules/{schedule.json()['ScheduleId']}").json()


def test_a_schedules_tick_in_a_refusing_window_is_skipped_and_names_the_window(api: Api) -> None:
    after = run_tick(api, "create_db", {"name": "db1"})
    assert after["Fired"] == 0 and after["Skipped"] == 1
    assert "task type create_db is frozen: freeze window change_freeze refuses new tasks until" in after["LastError"]
    assert api.store.list_tasks() == []


def test_a_schedules_tick_in_a_waiting_window_creates_a_task_that_waits(api: Api) -> None:
    after = run_tick(api, "free_form", {})
    assert after["Fired"] == 1 and after["LastError"] == ""
    (task,) = api.store.list_tasks()
    assert task.WaitingFor is not None and (task.WaitingFor.Kind, task.WaitingFor.Key) == (WaitKind.FREEZE, "maintenance")
    assert task.Runs == [] and task.Outbox == []


def test_a_repeat_of_a_key_used_before_the_window_answers_with_the_task_it_created(api: Api, tmp_path) -> None:
    # Created while no window was open: an OSS on the same store whose flows file has none.
    app, store, broker = open_api(tmp_path, flows=FLOWS)
    try:
        with TestClient(app) as before:
            first = before.post("/api/v1/tasks", json={"task_type": "create_db", "parameters": {"name": "db1"},
                                                       "idempotency_key": "k1"}, headers=auth())  # fmt: skip
    finally:
        store.close()
        broker.close()
    assert first.status_code == 201, first.text
    repeat = api.client.post("/api/v1/tasks", json={"task_type": "create_db", "parameters": {"name": "db1"},
                                                    "idempotency_key": "k1"}, headers=auth())  # fmt: skip
    assert repeat.status_code == 200 and repeat.json()["task_id"] == first.json()["task_id"]
    fresh = api.client.post("/api/v1/tasks", json={"task_type": "create_db", "parameters": {"name": "db1"},
                                                   "idempotency_key": "k2"}, headers=auth())  # fmt: skip
    assert fresh.status_code == 409 and fresh.json()["error"]["code"] == "frozen"
