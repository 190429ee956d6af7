"""Rate limits through the API and the CLI in one process (the in-process broker; the end-to-end
test, tests/e2e/test_rate_limits.py, runs the same over real processes): a task past its key's
limit waits and the task view, `baton get` and the dry-run plan say so; a rated step's attempt
waits in `waiting_rate` and goes once a slot frees."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from common.relay.outbox import OutboxPublisher
from oss.cli import main
from tests.api.support import FLOWS, Api, open_api
from tests.support.cluster import wait_until

RATE_FLOWS = FLOWS + """
  limited:
    rate: {key: "host:{host}", limit: 2, per: 1h}
    parameters:
      host: {type: string, required: true}
    steps:
      - name: work
        normal: {module: monitor, command: noop}
  stepped:
    parameters:
      host: {type: string, required: true}
    steps:
      - name: first
        normal: {module: monitor, command: noop}
      - name: call
        rate: {key: "api:{host}", limit: 1, per: 1s}
        normal: {module: monitor, command: noop}
"""


@pytest.fixture
def api(tmp_path) -> Iterator[Api]:
    app, store, broker = open_api(tmp_path, flows=RATE_FLOWS)
    with TestClient(app) as client:
        yield Api(client, store, broker)
    store.close()
    broker.close()


def env(tmp_path) -> dict[str, str]:
    return {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'api.db'}", "BATON_FLOWS_PATH": str(tmp_path / "flows.yaml")}


def test_the_third_task_on_a_key_waits_visibly_and_the_plan_says_when(api, tmp_path):
    ids = [api.create("limited", parameters={"host": "db1"})["task_id"] for _ in range(3)]
    shown = [api.get(f"/api/v1/tasks/{task_id}").json() for task_id in ids]
    assert [s["Rate"]["State"] for s in shown] == ["taken", "taken", "waiting"]
    assert shown[2]["WaitingFor"]["Kind"] == "rate" and shown[2]["Runs"] == []
    assert shown[2]["Rate"]["NextAt"] == shown[0]["Rate"]["Since"] + 3600
    listed = {t["TaskId"]: t for t in api.get("/api/v1/tasks", task_type="limited").json()["items"]}
    assert listed[ids[2]]["WaitingFor"]["Key"] == "host:db1"

    got = CliRunner().invoke(main, ["get", ids[2]], env=env(tmp_path))
    assert got.exit_code == 0, got.output
    assert "waiting for rate host:db1: 2 per 3600s, next slot at 20" in got.stdout
    started = CliRunner().invoke(main, ["get", ids[0]], env=env(tmp_path))
    assert "rate host:db1 (2 per 3600s): slot taken at 20" in started.stdout, started.stdout

    plan = api.client.post("/api/v1/tasks", json={"task_type": "limited", "parameters": {"host": "db1"}, "dry_run": True},
                           headers={"Authorization": "Bearer operator-token-0123456789"}).json()
    assert plan["start"]["when"] == "rate" and plan["rate"] == {
        "key": "host:db1", "limit": 2, "per_seconds": 3600.0, "slots_left": 0,
        "next_slot_at": shown[0]["Rate"]["Since"] + 3600}
    planned = CliRunner().invoke(main, ["submit", "limited", "host=db2", "--plan"], env=env(tmp_path))
    assert planned.exit_code == 0, planned.output
    assert "rate: host:db2 (2 per 3600s): 2 start slots left now" in planned.stdout


def test_a_rate_key_without_its_parameter_is_a_422_naming_it(api):
    response = api.client.post("/api/v1/tasks", json={"task_type": "limited", "parameters": {}},
                               headers={"Authorization": "Bearer operator-token-0123456789"})
    assert response.status_code == 422, response.text
    assert [f["path"] for f in response.json()["error"]["fields"]] == ["parameters.host"]


def test_a_rated_steps_attempt_waits_for_a_slot_then_goes(api, tmp_path):
    first, second = (api.create("stepped", parameters={"host": "h"})["task_id"] for _ in range(2))
    publisher = OutboxPublisher(api.store, api.broker, time.time)
    try:
        for task_id in (first, second):
            publisher.flush(api.step(task_id))  # step 0 done: the rated step's attempt asks for a slot
        runs = {task_id: api.get(f"/api/v1/tasks/{task_id}").json()["Runs"] for task_id in (first, second)}
        assert [r["State"] for r in runs[first]] == ["pending"] and [r["State"] for r in runs[second]] == ["waiting_rate"]
        shown = api.get(f"/api/v1/tasks/{second}").json()
        assert (shown["WaitingFor"]["Kind"], shown["WaitingFor"]["Key"]) == ("rate", "api:h")
        assert shown["Steps"][1]["State"] == "waiting" and shown["WaitingFor"]["Until"] > shown["WaitingFor"]["Since"]
        got = CliRunner().invoke(main, ["get", second], env=env(tmp_path))
        assert "waiting for a start slot of rate api:{host}: 1 per 1s" in got.stdout, got.stdout
        assert "waiting for rate api:h until 20" in got.stdout, got.stdout
        wait_until(lambda: api.get(f"/api/v1/tasks/{second}").json()["Runs"][0]["State"] == "pending", 30,
                   "the second attempt goes once the first's slot left the window")
    finally:
        publisher.stop()
    events = [e["Event"] for e in api.get(f"/api/v1/tasks/{second}").json()["History"]]
    assert "rate_waiting" in events and "rate_taken" in events


def test_a_rate_key_made_too_long_is_a_422_naming_the_parameter(api):
    response = api.client.post("/api/v1/tasks", json={"task_type": "limited", "parameters": {"host": "h" * 5000}},
                               headers={"Authorization": "Bearer operator-token-0123456789"})
    assert response.status_code == 422, response.text
    assert [f["path"] for f in response.json()["error"]["fields"]] == ["parameters.host"]
    assert "rate key too long" in response.text


SCOPED_TOKENS = json.dumps([
    {"name": "ops", "token": "ops-token-0123456789abcdef", "role": "operator"},
    {"name": "payments", "token": "payments-token-0123456789", "namespaces": [
        {"name": "payments", "task_types": ["limited"], "labels": {"team": "payments"}, "role": "operator"}]},
])


def test_a_scoped_tokens_plan_says_whether_a_slot_is_free_but_not_how_many_other_namespaces_took(tmp_path):
    app, store, broker = open_api(tmp_path, flows=RATE_FLOWS, api_tokens=SCOPED_TOKENS)
    try:
        with TestClient(app) as client:
            def post(token: str, team: str, dry_run: bool):
                return client.post("/api/v1/tasks", headers={"Authorization": f"Bearer {token}"}, json={
                    "task_type": "limited", "parameters": {"host": "db1"}, "labels": {"team": team},
                    "dry_run": dry_run})  # fmt: skip

            assert post("ops-token-0123456789abcdef", "shop", False).status_code == 201  # another namespace's start
            seen_by_ops = post("ops-token-0123456789abcdef", "payments", True).json()["rate"]
            assert (seen_by_ops["slots_left"], seen_by_ops["next_slot_at"]) == (1, None)
            scoped = post("payments-token-0123456789", "payments", True).json()
            assert (scoped["rate"]["slots_left"], scoped["rate"]["next_slot_at"]) == (None, None)
            assert scoped["start"]["when"] == "now"
            # Full: the new task would wait, and the plan says until when, as a held lock says it is held.
            assert post("ops-token-0123456789abcdef", "shop", False).status_code == 201
            full = post("payments-token-0123456789", "payments", True).json()
            assert full["rate"]["slots_left"] == 0 and full["rate"]["next_slot_at"] is not None
            assert full["start"]["when"] == "rate"
    finally:
        store.close()
        broker.close()
