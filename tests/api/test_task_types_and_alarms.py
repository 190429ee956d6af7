"""GET /api/v1/task-types[/{name}], GET /api/v1/alarms, POST /api/v1/alarms/{id}/ack."""

from __future__ import annotations

from common.engine.document import Alarm
from common.engine.states import Phase
from tests.api.support import READER, SECRET, SUBMITTER


def test_task_types_show_steps_rollbacks_timeouts_and_the_parameter_schema(api):
    response = api.get("/api/v1/task-types", token=READER)
    assert response.status_code == 200
    items = {item["name"]: item for item in response.json()["items"]}
    assert list(items) == ["create_db", "free_form"]
    create = items["create_db"]
    assert create["description"] == "A database on two modules."
    reserve = create["steps"][0]
    assert reserve["name"] == "reserve"
    assert reserve["normal"]["module"] == "resource" and reserve["normal"]["timeout"] == 5
    assert reserve["rollback"]["command"] == "noop_rollback"
    assert set(reserve["normal"]["backoff"]) == {"Initial", "Max", "Multiplier", "Jitter"}
    assert create["parameters"]["cpu"] == {"type": "integer", "required": False, "default": 1,
                                           "minimum": 1, "maximum": 64, "secret": False}  # fmt: skip
    assert create["parameters"]["admin_password"]["secret"] is True
    assert items["free_form"]["parameters"] is None and items["free_form"]["steps"][0]["rollback"] is None
    one = api.get("/api/v1/task-types/create_db", token=READER)
    assert one.status_code == 200 and one.json() == create


def test_a_task_type_answers_its_graph(tmp_path):
    from pathlib import Path

    from fastapi.testclient import TestClient

    from tests.api.support import auth, open_api

    shipped = (Path(__file__).resolve().parents[2] / "flows.yaml").read_text()
    app, store, _ = open_api(tmp_path, flows=shipped)
    with TestClient(app) as client:
        response = client.get("/api/v1/task-types/create_mysql_cluster", headers=auth(READER))
    store.close()
    assert response.status_code == 200
    steps = {s["name"]: s for s in response.json()["steps"]}
    assert steps["primary"]["flow"] == "create_mysql_instance" and steps["primary"]["normal"] is None
    assert steps["primary"]["inputs"]["name"] == "name" and steps["primary"]["after"] == []
    assert (steps["add_replicas"]["for_each"], steps["add_replicas"]["max_parallel"]) == ("replicas", 4)
    assert steps["add_replicas"]["after"] == ["primary"]
    assert steps["record_topology"]["after"] == ["primary", "add_replicas"]


def test_unknown_task_type_is_404(api):
    response = api.get("/api/v1/task-types/nope")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def alarm(alarm_id: str, time: float, task_id: str | None = None, message: str = "rollback failed") -> Alarm:
    return Alarm(AlarmId=alarm_id, Kind="rollback_failed", Time=time, Message=message, TaskId=task_id,
                 Cursor=1, Phase=Phase.ROLLBACK, Module="mysql", Command="noop_rollback")  # fmt: skip


def test_alarms_listed_newest_first_and_filtered(api):
    for i in range(3):
        api.store.add_alarm(alarm(f"a-{i}", 100.0 + i))
    api.store.acknowledge_alarm("a-0", by="someone", now=200.0)
    ids = lambda **p: [a["AlarmId"] for a in api.get("/api/v1/alarms", token=READER, **p).json()["items"]]
    assert ids() == ["a-2", "a-1", "a-0"]
    assert ids(acknowledged="false") == ["a-2", "a-1"] and ids(acknowledged="true") == ["a-0"]
    assert ids(limit=1) == ["a-2"]
    assert api.get("/api/v1/alarms", acknowledged="maybe").status_code == 422


def test_acknowledge_records_the_operator_once(api):
    api.store.add_alarm(alarm("a-1", 100.0))
    response = api.client.post("/api/v1/alarms/a-1/ack", headers={"Authorization": "Bearer operator-token-0123456789"})
    assert response.status_code == 200
    body = response.json()
    assert body["Acknowledged"] is True and body["AcknowledgedBy"] == "olga" and body["AcknowledgedAt"] > 0
    assert api.get("/api/v1/alarms", acknowledged="true").json()["items"][0]["AlarmId"] == "a-1"


def test_acknowledge_unknown_alarm_is_404_and_needs_the_operator_role(api):
    assert api.client.post("/api/v1/alarms/nope/ack", headers={"Authorization": "Bearer operator-token-0123456789"}).status_code == 404
    api.store.add_alarm(alarm("a-1", 100.0))
    for token in (READER, SUBMITTER):
        response = api.client.post("/api/v1/alarms/a-1/ack", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 403
    assert api.client.post("/api/v1/alarms/a-1/ack").status_code == 401


def test_an_alarm_quoting_a_task_secret_is_masked(api):
    task_id = api.create(parameters={"name": "db1", "admin_password": SECRET})["task_id"]
    api.store.add_alarm(alarm("a-1", 100.0, task_id, f"rollback failed: auth {SECRET} refused"))
    response = api.get("/api/v1/alarms")
    assert SECRET not in response.text
    assert response.json()["items"][0]["Message"] == "rollback failed: auth *** refused"


def test_an_acknowledgement_reason_is_stored_with_its_secret_masked_and_refuses_invisible_characters(api):
    api.store.add_alarm(alarm("a-9", 100.0))
    headers = {"Authorization": "Bearer operator-token-0123456789"}
    hostile = api.client.post("/api/v1/alarms/acknowledge", headers=headers,
                              json={"ids": ["a-9"], "reason": "seen \u202eyb"})  # fmt: skip
    assert hostile.status_code == 422 and hostile.json()["error"]["fields"][0]["path"].endswith("reason"), hostile.text
    done = api.client.post("/api/v1/alarms/acknowledge", headers=headers,
                           json={"ids": ["a-9"], "reason": "rotated, old token=tok-123456"})  # fmt: skip
    assert done.status_code == 200 and done.json()["acknowledged"] == ["a-9"], done.text
    listed = api.get("/api/v1/alarms", acknowledged="true")
    assert "tok-123456" not in listed.text and "token=***" in listed.text, listed.text
