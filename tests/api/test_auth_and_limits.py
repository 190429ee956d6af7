"""401 without a valid bearer token, 403 for a role too low, 413 for a body over the limit."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.support import OPERATOR, READER, SUBMITTER, auth, open_api

READ_ROUTES = ["/api/v1/tasks", "/api/v1/tasks/x", "/api/v1/task-types", "/api/v1/task-types/x", "/api/v1/alarms"]


@pytest.mark.parametrize("path", READ_ROUTES)
@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": f"Basic {OPERATOR}"},
     {"Authorization": "Bearer"}, {"Authorization": f"Bearer {OPERATOR}x"}, {"Authorization": "Bearer é".encode("latin-1")}],
)  # fmt: skip
def test_no_valid_token_is_401(api, path, headers):
    response = api.client.get(path, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"] == {"code": "unauthorized", "message": "a valid bearer token is required", "fields": []}


@pytest.mark.parametrize("token", [READER, SUBMITTER, OPERATOR])
def test_every_role_may_read(api, token):
    for path in ("/api/v1/tasks", "/api/v1/task-types", "/api/v1/alarms"):
        assert api.client.get(path, headers=auth(token)).status_code == 200


def test_creating_a_task_needs_the_submit_role(api):
    body = {"task_type": "free_form"}
    assert api.client.post("/api/v1/tasks", json=body).status_code == 401
    forbidden = api.client.post("/api/v1/tasks", json=body, headers=auth(READER))
    assert forbidden.status_code == 403 and forbidden.json()["error"]["message"] == "rita has the read role; this needs submit"
    assert api.client.post("/api/v1/tasks", json=body, headers=auth(SUBMITTER)).status_code == 201
    assert api.client.post("/api/v1/tasks", json=body, headers=auth(OPERATOR)).status_code == 201


def test_auth_comes_before_body_validation(api):
    assert api.client.post("/api/v1/tasks", json={"nonsense": 1}).status_code == 401
    assert api.client.post("/api/v1/tasks/x/cancel", json={}, headers=auth(READER)).status_code == 403


def test_a_declared_body_over_the_limit_is_413_unread(tmp_path):
    app, store, _ = open_api(tmp_path, max_body_bytes=2048)
    with TestClient(app) as client:
        big = {"task_type": "free_form", "parameters": {"blob": "x" * 4096}}
        response = client.post("/api/v1/tasks", json=big, headers=auth())
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "payload_too_large"
        small = {"task_type": "free_form", "parameters": {"blob": "x" * 1000}}
        assert client.post("/api/v1/tasks", json=small, headers=auth()).status_code == 201
        assert len(store.list_tasks()) == 1
    store.close()


def test_a_chunked_body_over_the_limit_is_413(tmp_path):
    app, store, _ = open_api(tmp_path, max_body_bytes=2048)

    def chunks():
        yield b'{"task_type": "free_form", "parameters": {"blob": "'
        for _ in range(10):
            yield b"y" * 512
        yield b'"}}'

    with TestClient(app) as client:
        headers = {**auth(), "Content-Type": "application/json"}
        response = client.post("/api/v1/tasks", content=chunks(), headers=headers)
        assert "content-length" not in {k.lower() for k in response.request.headers}
        assert response.request.headers["transfer-encoding"] == "chunked"
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "payload_too_large"
        action = client.post("/api/v1/tasks/x/cancel", content=chunks(), headers=headers)
        assert action.status_code == 413
        assert store.list_tasks() == []
    store.close()


def test_token_configuration_never_echoes_a_token():
    from common.errors import ConfigError
    from oss.settings import load_oss_settings

    with pytest.raises(ConfigError) as caught:
        load_oss_settings(api_tokens="alice:a-secret-token-value-1234:admin")
    assert "a-secret-token-value-1234" not in str(caught.value)
    assert "entry 1 (alice): the role must be read, submit or operator" in str(caught.value)
    for bad in ("alice:short:read", "alice:0123456789abcdef", "a b:0123456789abcdef:read",
                "a:0123456789abcdef:read,a:0123456789abcdeX:read", "a:0123456789abcdef:read,b:0123456789abcdef:read"):  # fmt: skip
        with pytest.raises(ConfigError) as caught:
            load_oss_settings(api_tokens=bad)
        assert "0123456789abcde" not in str(caught.value)
