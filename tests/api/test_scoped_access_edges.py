"""Scoped tokens beyond the route walk of tests/api/test_scoped_access.py: the hostile-input walk
with a scoped token, an unreadable document, the CLI commands that take a token, a private
metrics page and how a hidden id is replaced."""

from __future__ import annotations

import json
import sqlite3

import pytest
from fastapi.testclient import TestClient

from tests.api.scoped_world import (  # noqa: F401  (world: a fixture, found by name)
    DASHBOARDS,
    FLOWS,
    OPS,
    PAYMENTS,
    SECRET,
    TOKENS,
    World,
    not_found,
    world,
)
from tests.api.support import open_api
from tests.api.test_route_walk import BAD_VALUES, operations, url
from tests.support.builders import nested


# --- the hostile-input walk (tests/api/test_route_walk.py), with a scoped token ------------------


@pytest.mark.parametrize("value", BAD_VALUES[::2])  # the full set: test_route_walk.py, with an unscoped token
def test_hostile_path_and_query_values_with_a_scoped_token_answer_4xx_and_echo_nothing(world: World, value: str) -> None:
    document = world.api.client.get("/api/v1/openapi.json").json()
    for path, method, op in operations(document):
        if "401" not in op["responses"]:
            continue
        params = {p["name"]: value for p in op.get("parameters", []) if p["in"] == "query"}
        for target, query in ((url(path, value), None), (url(path, world.theirs), params)):
            response = world.call(method, target, params=query, content=b'{"reason": "walk"}',
                                  headers_extra={"Content-Type": "application/json"})  # fmt: skip
            assert response.status_code < 500, (method, target, repr(value), response.text[:300])
            assert value not in response.text or value.isascii() and value.isalnum()
            assert world.theirs not in response.text and SECRET not in response.text, (method, path)
    world.untouched(world.theirs)


def test_an_unreadable_document_is_no_such_task_to_a_scoped_token(world: World) -> None:
    with sqlite3.connect(world.api.store.path) as conn:  # a document the reader cannot take
        conn.execute("UPDATE tasks SET doc = json_set(doc, '$.Parameters.x', json(?)) WHERE task_id = ?",
                     (json.dumps(nested(199)), world.theirs))  # fmt: skip
    for path in (f"/api/v1/tasks/{world.theirs}", f"/api/v1/tasks/{world.theirs}/steps/0/items"):
        not_found(world, world.call("get", path), path.replace(world.theirs, "nope"))
    not_found(world, world.call("post", f"/api/v1/tasks/{world.theirs}/cancel", json={"reason": "x"}),
              "/api/v1/tasks/nope/cancel", "post", json={"reason": "x"})  # fmt: skip
    assert world.call("get", f"/api/v1/tasks/{world.theirs}", OPS).status_code == 409  # the others are told


# --- the CLI ---------------------------------------------------------------------------------

# The commands that call the API with a token (and so get what a scoped token gets): each is
# walked with a scoped token in tests/e2e/test_scoped_access.py. Every other command works on
# the store with the store's credentials (docs/guide/access.md, "The command line").
API_COMMANDS = {("watch",)}


def test_every_cli_command_that_takes_an_api_token_is_walked_with_a_scoped_one() -> None:
    from tests.support.cli_walk import commands

    taking = {path for path, command in commands()
              if any(getattr(p, "envvar", None) == "BATON_API_TOKEN" or "--token" in getattr(p, "opts", ())
                     for p in command.params)}  # fmt: skip
    assert taking == API_COMMANDS, f"walk these with a scoped token too: {sorted(taking - API_COMMANDS)}"


def test_a_private_metrics_page_counts_every_team_so_a_scoped_token_is_refused(tmp_path) -> None:
    app, store, broker = open_api(tmp_path, flows=FLOWS, api_tokens=TOKENS, metrics_public=False)
    with TestClient(app) as client:
        for token, status in ((PAYMENTS, 403), (DASHBOARDS, 403), (OPS, 200)):
            answer = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == status, (token[:8], answer.text[:200])
        assert client.get("/metrics").status_code == 401
    store.close()
    broker.close()


def test_a_hidden_id_is_replaced_whole_never_inside_another() -> None:
    from oss.api.scoped_views import OTHERS, _without

    text = '{"a": "p1.1", "b": "p1.10", "m": "child task p1.1 failed; p1.12 ok", "c": "xp1.1"}'
    assert _without(text, ["p1.1"]) == (f'{{"a": "{OTHERS}", "b": "p1.10", "m": "child task {OTHERS} failed; '
                                        f'p1.12 ok", "c": "xp1.1"}}')  # fmt: skip
