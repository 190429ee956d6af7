"""POST /api/v1/tasks and GET /api/v1/tasks/{task_id} serve their common request without
FastAPI's dependency solving (oss/api/lean/), and hand every other request to FastAPI's
own handler: its refusals, word for word, come from one place."""

from __future__ import annotations

import pytest
from fastapi import routing

from oss.api.schemas import TaskCreated, TaskDetail
from tests.api.support import READER, SUBMITTER, auth
from tests.api.test_dry_run import nothing_created


@pytest.fixture
def solved(monkeypatch) -> list[str]:
    """The paths FastAPI solved the dependencies of (its handler looks the function up per call)."""
    paths: list[str] = []
    solve = routing.solve_dependencies

    async def counted(*, request, **kwargs):  # type: ignore[no-untyped-def]
        paths.append(request.url.path)
        return await solve(request=request, **kwargs)

    monkeypatch.setattr(routing, "solve_dependencies", counted)
    return paths


def test_a_valid_submission_and_a_read_skip_the_dependency_solving(api, solved):
    created = api.client.post("/api/v1/tasks", json={"task_type": "free_form", "idempotency_key": "k1"},
                              headers=auth(SUBMITTER))  # fmt: skip
    assert created.status_code == 201 and created.headers["Location"] == f"/api/v1/tasks/{created.json()['task_id']}"
    task_id = TaskCreated.model_validate_json(created.content).task_id
    again = api.client.post("/api/v1/tasks", json={"task_type": "free_form", "idempotency_key": "k1"},
                            headers=auth(SUBMITTER))  # fmt: skip
    assert again.status_code == 200 and again.json()["task_id"] == task_id
    first = api.client.get(f"/api/v1/tasks/{task_id}", headers=auth(READER))  # opens the module registry
    second = api.client.get(f"/api/v1/tasks/{task_id}", headers=auth(READER))
    assert first.status_code == second.status_code == 200
    assert TaskDetail.model_validate_json(second.content).TaskId == task_id
    assert solved == [f"/api/v1/tasks/{task_id}"]  # only the read that opened the registry


def test_a_dry_run_is_served_by_the_fast_path_too(api, solved):
    answer = api.client.post("/api/v1/tasks", json={"task_type": "free_form", "dry_run": True}, headers=auth(SUBMITTER))
    assert answer.status_code == 200 and "steps" in answer.text.lower()
    assert solved == [] and nothing_created(api)


@pytest.mark.parametrize(
    ("headers", "body", "query", "status", "words"),
    [
        ({}, {"task_type": "free_form"}, "", 401, "a valid bearer token is required"),
        (auth(READER), {"task_type": "free_form"}, "", 403, "rita has the read role"),
        (auth(SUBMITTER), {"task_type": "free_form"}, "?x=1", 422, '"path":"query.x"'),
        (auth(SUBMITTER), {"task_type": "free_form", "dry_run": "true"}, "", 422, '"path":"dry_run"'),
        (auth(SUBMITTER), {"task_type": "free_form", "colour": 1}, "", 422, '"path":"colour"'),
        (auth(SUBMITTER), {"task_type": ""}, "", 422, '"path":"task_type"'),
    ],
)
def test_any_other_submission_gets_fastapis_own_answer(api, solved, headers, body, query, status, words):
    answer = api.client.post(f"/api/v1/tasks{query}", json=body, headers=headers)
    assert answer.status_code == status and words in answer.text, answer.text
    assert solved == ["/api/v1/tasks"]


def test_a_body_that_is_not_json_or_not_declared_json_gets_fastapis_own_answer(api, solved):
    broken = api.client.post("/api/v1/tasks", content=b"{nope", headers={**auth(SUBMITTER), "Content-Type": "application/json"})
    assert broken.status_code == 422 and "body" in broken.text
    plain = api.client.post("/api/v1/tasks", content=b'{"task_type": "free_form"}',
                            headers={**auth(SUBMITTER), "Content-Type": "text/plain"})  # fmt: skip
    assert plain.status_code == 422
    assert nothing_created(api)


def test_a_read_with_a_query_or_no_token_gets_fastapis_own_answer(api, solved):
    task_id = api.create("free_form")["task_id"]
    assert api.client.get(f"/api/v1/tasks/{task_id}", headers=auth(READER)).status_code == 200
    solved.clear()
    assert api.client.get(f"/api/v1/tasks/{task_id}").status_code == 401
    assert api.client.get(f"/api/v1/tasks/{task_id}?x=1", headers=auth(READER)).status_code == 422
    assert api.client.get("/api/v1/tasks/nope", headers=auth(READER)).status_code == 404  # fast path: the route's 404
    assert solved == [f"/api/v1/tasks/{task_id}"] * 2
