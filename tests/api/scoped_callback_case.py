"""The scoped-access walk's case of the callback route (tests/api/test_scoped_access.py)."""

from __future__ import annotations

from typing import Any


def callback_case(w: Any, scoped: str, secret: str) -> None:
    """No API token is asked (the callback token is the credential), so no namespace applies: a
    token naming any team's task that is not one it gave out is no such token, word for word,
    with or without a scoped API token, and nothing changes."""
    from common.engine.commands import new_token

    body = {"action": "succeed", "output": {"x": 1}}
    nothing = w.api.client.post("/api/v1/callbacks/nope", json=body)
    assert nothing.status_code == 404
    for task_id in (w.theirs, w.mine, w.report):
        for token in (None, scoped):
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            answer = w.api.client.post(f"/api/v1/callbacks/{new_token(task_id)}", json=body, headers=headers)
            assert answer.status_code == 404 and answer.json() == nothing.json(), answer.text
            assert task_id not in answer.text and secret not in answer.text
        w.untouched(task_id)
        assert "x" not in w.api.store.get(task_id).Parameters
