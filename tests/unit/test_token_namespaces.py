"""BATON_API_TOKENS' JSON form (docs/design/access.md): scoped and unscoped entries, and a
refusal for each fault naming the entry, the field and the value, never a token."""

from __future__ import annotations

import json

import pytest

from common.access import Namespace, labels_asked, role_on
from common.errors import ConfigError
from oss.settings import load_oss_settings, parse_tokens

TOKEN = "team-a-token-0123456789"
OTHER = "ops-token-0123456789abc"


def entries(*given: dict) -> str:
    return json.dumps(list(given))


def scoped(**namespace) -> dict:
    return {"name": "team-a", "token": TOKEN, "namespaces": [{"name": "dbs", "role": "submit", **namespace}]}


def test_the_json_form_holds_scoped_and_unscoped_tokens() -> None:
    (ops, team) = parse_tokens(entries(
        {"name": "ops", "token": OTHER, "role": "operator"},
        {"name": "team-a", "token": TOKEN, "namespaces": [
            {"name": "dbs", "task_types": ["create_db"], "labels": {"team": "a"}, "role": "operator"},
            {"name": "all-of-a", "labels": {"team": "a"}, "role": "read"},
        ]},
    ))  # fmt: skip
    assert ops.scope is None and ops.role == "operator"
    assert team.role == "operator"  # its highest
    assert [ns.name for ns in team.scope] == ["dbs", "all-of-a"]


def test_the_short_form_is_unchanged() -> None:
    (token,) = parse_tokens(f"ci:{TOKEN}:submit")
    assert token.scope is None and token.role == "submit"


def test_a_tasks_role_is_the_highest_of_the_namespaces_holding_it() -> None:
    scope = (Namespace("dbs", "operator", frozenset({"create_db"}), {"team": "a"}),
             Namespace("all", "read", frozenset(), {"team": "a"}))  # fmt: skip
    assert role_on(scope, "create_db", {"team": "a", "env": "prod"}) == "operator"
    assert role_on(scope, "free_form", {"team": "a"}) == "read"
    assert role_on(scope, "create_db", {"team": "b"}) is None
    assert role_on(scope, "create_db", {}) is None
    assert role_on((), "create_db", {"team": "a"}) is None
    assert labels_asked(scope, "create_db", "submit") == [{"team": "a"}]


@pytest.mark.parametrize(("value", "said"), [
    ("[1", "not valid JSON at line 1"),
    ('{"name": "x"}', "the JSON form is a list of entries"),
    (entries({"name": "team a", "token": TOKEN, "role": "read"}), "entry 1: name: must be 1-64 letters"),
    (entries({"name": "t", "token": TOKEN, "role": "admin"}), "entry 1 (t): role: must be read, submit or operator (got 'admin')"),
    (entries({"name": "t", "token": TOKEN}), "entry 1 (t): give either role (every task) or namespaces (only theirs), not neither"),
    (entries({"name": "t", "token": TOKEN, "role": "read", "namespaces": []}), "not both"),
    (entries({"name": "t", "token": TOKEN, "role": "read", "scopes": []}), "entry 1 (t): unknown field 'scopes'"),
    (entries({"name": "t", "token": TOKEN, "namespaces": []}), "entry 1 (t): namespaces: must be a list of 1 to 64"),
    (entries(scoped(task_types=["create_db"], role="boss")), "entry 1 (team-a): namespaces[0].role: must be read, submit or operator (got 'boss')"),
    (entries(scoped()), "entry 1 (team-a): namespaces[0]: give task_types and/or labels"),
    (entries(scoped(task_types="create_db")), "namespaces[0].task_types: must be a list of task type names (got 'create_db')"),
    (entries(scoped(labels={"te.am": "a"})), "namespaces[0].labels: the key 'te.am' is not a label key"),
    (entries(scoped(labels={"team": 7})), "namespaces[0].labels.team: must be a string of up to 256 printable characters (got 7)"),
    (entries(scoped(labels={"team": "a"}, owner="x")), "namespaces[0]: unknown field 'owner'"),
    (entries({"name": "t", "token": "short", "role": "read"}), "entry 1 (t): token: must be 16+ characters"),
    (entries({"name": "t", "token": TOKEN, "role": "read"}, {"name": "u", "token": TOKEN, "role": "read"}),
     "entry 2 (u): token: used twice"),
])  # fmt: skip
def test_a_bad_entry_is_refused_naming_entry_field_and_value_never_the_token(value: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_oss_settings(api_tokens=value)
    message = str(caught.value)
    assert "BATON_API_TOKENS" in message and said in message, message
    assert TOKEN not in message and "short" not in message.replace("short form", "")


def test_a_namespace_naming_a_task_type_flows_yaml_lacks_stops_the_app(tmp_path) -> None:
    from tests.api.support import open_api

    value = entries(scoped(task_types=["create_db", "crate_db"]))
    with pytest.raises(ConfigError, match=r"entry 1 \(team-a\): namespaces\[0\]\.task_types: 'crate_db' is not a task type"):
        open_api(tmp_path, api_tokens=value)
