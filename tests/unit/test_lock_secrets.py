"""A lock key never shows a secret: the loader refuses keys built from one where flows.yaml
tells (a declared secret, a secret-looking name, the item of a secret list), and a value found
secret only at submission keys the lock by its digest, the same for the same value."""

from __future__ import annotations

import pytest

from common.errors import FlowError
from common.flows.loader import parse_flows
from common.engine.core.key_templates import render_key
from common.engine.document import LockTemplate
from common.engine.core.entries import Timing, create_task
from common.engine.core.unit_parameters import unit_secrets
from tests.support.builders import counter_ids, make_step

SECRET_LIST = """version: 1
task_types:
  rotate:
    parameters:
      passwords: {type: array, secret: true}
    steps:
      - name: each
        for_each: passwords
        lock: {key: "rot:{item}"}
        normal: {module: m, command: c}
"""
UNDECLARED = """version: 1
task_types:
  any:
    lock: {key: "any:{api_token}"}
    steps:
      - {name: a, normal: {module: m, command: c}}
"""


def test_the_item_of_a_secret_list_is_refused_in_a_step_lock_key() -> None:
    with pytest.raises(FlowError) as error:
        parse_flows(SECRET_LIST)
    assert ('flows.yaml:9: task_types.rotate.steps[0].lock.key: names item of secret list "passwords": '
            "a lock key is shown in the API, the console and the logs; key it by item_index") in str(error.value)
    parse_flows(SECRET_LIST.replace("{item}", "{item_index}"))  # its position is no secret


def test_a_secret_looking_name_is_refused_in_a_type_without_parameters() -> None:
    with pytest.raises(FlowError) as error:
        parse_flows(UNDECLARED)
    assert ('flows.yaml:4: task_types.any.lock.key: names secret parameter "api_token": '
            "a lock key is shown in the API, the console and the logs") in str(error.value)
    undeclared_list = UNDECLARED.replace('"any:{api_token}"', '"any:{cluster}"').replace(
        "{name: a,", '{name: a, for_each: secrets, lock: {key: "s:{item}"},')
    with pytest.raises(FlowError, match='names item of secret list "secrets"'):
        parse_flows(undeclared_list)
    assert parse_flows(UNDECLARED.replace("api_token", "cluster")).get("any").lock.Key == "any:{cluster}"


def test_a_value_holding_a_secret_keys_the_lock_by_its_digest() -> None:
    dsn = "mysql://root:pw-canary@db/x"
    key = render_key("db:{dsn}", {"dsn": dsn})
    assert "canary" not in key and key.startswith("db:sha256:") and len(key) == len("db:sha256:") + 16
    assert render_key("db:{dsn}", {"dsn": dsn}) == key  # identity: the same value, the same key
    assert render_key("db:{dsn}", {"dsn": dsn.replace("pw-", "other-")}) != key
    assert "canary" not in render_key("c:{conn}", {"conn": {"host": "h", "password": "canary"}})
    assert render_key("c:{name}", {"name": "eu"}) == "c:eu"  # plain values are shown as they are
    assert render_key("c:{name}", {"name": "canary"}, secret={"name"}).startswith("c:sha256:")


def test_a_step_lock_over_a_secret_list_never_shows_an_item() -> None:
    """Built by hand: the loader refuses this step, the engine still never shows the items."""
    step = make_step("each")
    step.Lock, step.ForEach = LockTemplate(Key="rot:{item}", Limit=1), "keys"
    task = create_task(task_type="t", steps=[step], parameters={"keys": ["canary-1", "canary-2"]},
                       secret_parameters=["keys"], timing=Timing(1.0), ids=counter_ids(), task_id="T")
    keys = [e.Body["Key"] for e in task.Outbox]
    assert len(set(keys)) == 2 and not any("canary" in k for k in keys)
    assert "canary" not in str([u.Key for u in task.UnitLocks]) + str([h.Message for h in task.History])
    assert unit_secrets([], "passwords") == {"item"} and unit_secrets(["a"], "hosts") == {"a"}
