"""/healthz, /readyz, /metrics, the OpenAPI document, and errors that are never a bare 500."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient

from common.errors import BrokerError, StoreError
from oss.api import errors
from tests.api.support import READER, auth, open_api


def test_healthz_and_readyz_are_open(api):
    assert api.client.get("/healthz").json() == {"status": "ok"}
    response = api.client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"ready": True, "checks": {"store": "ok", "broker": "ok"}}


class Down:
    def __init__(self, error):
        self.error = error

    def ping(self):
        raise self.error


@pytest.mark.parametrize("part", ["store", "broker"])
def test_readyz_is_503_naming_what_failed(api, monkeypatch, part):
    error = StoreError("sqlite: disk I/O error") if part == "store" else BrokerError("amqp://u:hunter2@h: refused")
    context = api.client.app.state.baton
    monkeypatch.setattr(getattr(context, part), "ping", Down(error).ping)
    response = api.client.get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks[part].startswith("failed: ") and [v for k, v in checks.items() if k != part] == ["ok"]
    assert "hunter2" not in response.text
    # No token is needed: the body names no host, port or driver's words, the log does.
    assert "disk I/O" not in response.text and "amqp" not in response.text and "refused" not in response.text


def test_a_store_outage_is_503_not_500(api, monkeypatch):
    def broken(*_args, **_kwargs):
        raise StoreError("database is locked")

    monkeypatch.setattr(api.store, "get", broken)
    monkeypatch.setattr(api.store, "list_tasks", broken)
    for response in (api.get("/api/v1/tasks/x"), api.get("/api/v1/tasks")):
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "store_unavailable"


def test_unexpected_errors_answer_500_in_the_one_shape(tmp_path, monkeypatch):
    logged = []
    monkeypatch.setattr(errors, "log", SimpleNamespace(error=lambda *a, **k: logged.append((a, k))))
    app, store, _ = open_api(tmp_path)
    with TestClient(app, raise_server_exceptions=False) as client:
        monkeypatch.setattr(store, "get", lambda *_: 1 / 0)
        response = client.get("/api/v1/tasks/x", headers=auth())
        assert response.status_code == 500
        assert response.json() == {"error": {"code": "internal", "message": "internal error", "fields": []}}
    # Logged by type and place, never by message: an exception's text may quote the input.
    assert logged and logged[0][1]["error"] == "ZeroDivisionError"
    assert "test_health_and_metrics.py" in logged[0][1]["where"]
    store.close()


def test_unknown_routes_and_methods_use_the_error_shape(api):
    missing = api.client.get("/api/v1/nothing-here")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    wrong = api.client.delete("/api/v1/tasks", headers=auth())
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"


def test_metrics_count_tasks_requests_and_latency_by_route(api):
    task_id = api.create("free_form")["task_id"]
    api.get(f"/api/v1/tasks/{task_id}")
    api.get("/api/v1/tasks/other-id")
    api.client.get("/api/v1/tasks")
    text = api.client.get("/metrics").text
    assert 'baton_tasks_created_total{task_type="free_form"} 1.0' in text
    assert 'baton_api_requests_total{method="GET",route="/api/v1/tasks/{task_id}",status="200"} 1.0' in text
    assert 'baton_api_requests_total{method="GET",route="/api/v1/tasks/{task_id}",status="404"} 1.0' in text
    assert 'baton_api_requests_total{method="GET",route="/api/v1/tasks",status="401"} 1.0' in text
    assert 'baton_api_request_seconds_count{method="POST",route="/api/v1/tasks"} 1.0' in text
    assert task_id not in text  # ids are not labels


def test_each_app_has_its_own_registry(tmp_path, api):
    api.create("free_form")
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    app, store, _ = open_api(other_dir)
    with TestClient(app) as client:
        assert "baton_tasks_created_total{" not in client.get("/metrics").text
    store.close()


def test_metrics_can_require_a_token(tmp_path):
    app, store, _ = open_api(tmp_path, metrics_public=False)
    with TestClient(app) as client:
        assert client.get("/metrics").status_code == 401
        response = client.get("/metrics", headers=auth(READER))
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    store.close()


def test_the_openapi_document_is_served_with_every_route(api):
    response = api.client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert {"/api/v1/tasks", "/api/v1/tasks/{task_id}", "/api/v1/tasks/{task_id}/cancel",
            "/api/v1/tasks/{task_id}/retry", "/api/v1/tasks/{task_id}/retry-rollback",
            "/api/v1/tasks/{task_id}/compensate", "/api/v1/task-types", "/api/v1/task-types/{name}",
            "/api/v1/alarms", "/api/v1/alarms/{alarm_id}/ack", "/healthz", "/readyz", "/metrics"} <= set(paths)  # fmt: skip
    create = paths["/api/v1/tasks"]["post"]["responses"]
    assert {"200", "201", "401", "403", "413", "422"} <= set(create)
    assert "HTTPValidationError" not in response.text  # our error shape replaces FastAPI's
    assert api.client.get("/api/v1/docs").status_code == 200
