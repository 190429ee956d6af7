"""/api/v1/schedules: create, list, show, pause, resume, delete; every refusal a 4xx."""

from __future__ import annotations

from tests.api.support import READER, SECRET, SUBMITTER, Api, auth

BODY = {"name": "nightly", "task_type": "create_db", "parameters": {"name": "db1"}, "cron": "0 3 * * *",
        "timezone": "Europe/Paris", "labels": {"team": "db"}}  # fmt: skip


def create(api: Api, **changes: object):
    return api.client.post("/api/v1/schedules", json={**BODY, **changes}, headers=auth())


def test_create_then_show_by_name_and_by_id(api: Api) -> None:
    response = create(api)
    assert response.status_code == 201, response.text
    created = response.json()
    assert response.headers["Location"] == f"/api/v1/schedules/{created['ScheduleId']}"
    assert created["Parameters"] == {"name": "db1", "cpu": 1}  # defaults filled in, as a submission's
    assert created["CreatedBy"] == "olga" and created["Overlap"] == "skip" and created["Missed"] == "latest"
    assert created["NextAt"] > created["TimeCreate"]
    for ref in ("nightly", created["ScheduleId"]):
        shown = api.get(f"/api/v1/schedules/{ref}", token=READER)
        assert shown.status_code == 200 and shown.json() == created
    listed = api.get("/api/v1/schedules", token=READER).json()["items"]
    assert [s["Name"] for s in listed] == ["nightly"]


def test_secret_parameters_are_masked(api: Api) -> None:
    created = create(api, parameters={"name": "db1", "admin_password": SECRET}).json()
    assert created["Parameters"]["admin_password"] == "***"
    assert SECRET not in api.get("/api/v1/schedules", token=READER).text


def test_a_type_without_parameters_has_its_schedule_masked_as_its_tasks_are(api: Api) -> None:
    """No declared secrets: secret-looking keys and URL passwords are masked, as in POST /tasks."""
    parameters = {"api_token": "tok-canary-1", "dsn": "mysql://root:pw-canary-2@db/x", "note": "plain"}
    created = create(api, task_type="free_form", parameters=parameters)
    assert created.status_code == 201, created.text
    task_id = api.create("free_form", parameters=parameters)["task_id"]
    task = api.get(f"/api/v1/tasks/{task_id}").json()
    assert created.json()["Parameters"] == task["Parameters"] == {
        "api_token": "***", "dsn": "mysql://root:***@db/x", "note": "plain"}  # fmt: skip
    for path in ("/api/v1/schedules", "/api/v1/schedules/nightly"):
        assert "canary" not in api.get(path, token=READER).text


def test_a_schedule_s_last_error_quoting_a_secret_is_masked(api: Api) -> None:
    create(api, parameters={"name": "db1", "admin_password": SECRET})
    schedules = api.client.app.state.schedules
    stored = schedules.get("nightly")
    failed = stored.model_copy(update={"LastError": f"tick 1: login with {SECRET} refused", "Version": 1})
    assert schedules._schedules.compare_and_set(failed, stored.Version)
    shown = api.get("/api/v1/schedules/nightly", token=READER).json()
    assert shown["LastError"] == "tick 1: login with *** refused"


def test_pause_resume_and_delete(api: Api) -> None:
    create(api)
    paused = api.client.post("/api/v1/schedules/nightly/pause", headers=auth())
    assert paused.status_code == 200 and paused.json()["Paused"] is True
    again = api.client.post("/api/v1/schedules/nightly/pause", headers=auth())
    assert again.status_code == 409 and "paused already" in again.json()["error"]["message"]
    resumed = api.client.post("/api/v1/schedules/nightly/resume", headers=auth())
    assert resumed.status_code == 200 and resumed.json()["Paused"] is False
    assert api.client.delete("/api/v1/schedules/nightly", headers=auth()).status_code == 204
    assert api.get("/api/v1/schedules/nightly").status_code == 404
    assert api.client.delete("/api/v1/schedules/nightly", headers=auth()).status_code == 404


def test_refusals_name_the_problem(api: Api) -> None:
    create(api)
    duplicate = create(api)
    assert duplicate.status_code == 409 and duplicate.json()["error"]["fields"] == [{"path": "name", "message": "taken"}]
    cases = [
        ({"cron": "61 * * * *"}, "cron"),
        ({"timezone": "Mars/Olympus", "name": "x1"}, "timezone"),
        ({"cron": None, "name": "x2"}, "cron"),
        ({"cron": None, "interval_seconds": 0.5, "name": "x3"}, "interval_seconds"),
        ({"parameters": {}, "name": "x4"}, "parameters.name"),
        ({"overlap": "sometimes", "name": "x5"}, "overlap"),
        ({"name": "Bad Name"}, "name"),
        ({"surprise": 1, "name": "x6"}, "surprise"),
    ]
    for changes, field in cases:
        response = create(api, **changes)
        assert 400 <= response.status_code < 500, (changes, response.text)
        fields = [f["path"] for f in response.json()["error"].get("fields", [])]
        assert any(field in f for f in fields) or field in response.text, (changes, response.text)
    unknown = create(api, task_type="nope", name="x7")
    assert unknown.status_code == 422 and unknown.json()["error"]["fields"][0]["path"] == "task_type"
    assert [s["Name"] for s in api.get("/api/v1/schedules").json()["items"]] == ["nightly"]


def test_roles(api: Api) -> None:
    assert api.client.post("/api/v1/schedules", json=BODY, headers=auth(SUBMITTER)).status_code == 403
    assert api.client.post("/api/v1/schedules", json=BODY).status_code == 401
    create(api)
    assert api.client.post("/api/v1/schedules/nightly/pause", headers=auth(READER)).status_code == 403
    assert api.client.delete("/api/v1/schedules/nightly", headers=auth(READER)).status_code == 403
