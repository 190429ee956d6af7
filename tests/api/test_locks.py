"""Per-key locks through the API and the CLI: a task that cannot take its lock waits, visibly
(task view, listing, GET /api/v1/locks, `baton locks`), and starts once the holder ended."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from common.relay.outbox import OutboxPublisher
from oss.cli import main
from tests.api.support import FLOWS, READER, Api, open_api

LOCK_FLOWS = FLOWS + """
  exclusive:
    lock: {key: "cluster:{cluster}"}
    steps:
      - name: work
        normal: {module: monitor, command: noop}
"""


@pytest.fixture
def api(tmp_path) -> Iterator[Api]:
    app, store, broker = open_api(tmp_path, flows=LOCK_FLOWS)
    with TestClient(app) as client:
        yield Api(client, store, broker)
    store.close()
    broker.close()


def test_the_second_task_on_a_key_waits_visibly_and_starts_when_the_first_ends(api, tmp_path):
    first = api.create("exclusive", parameters={"cluster": "eu"})["task_id"]
    second = api.create("exclusive", parameters={"cluster": "eu"})["task_id"]
    other = api.create("exclusive", parameters={"cluster": "us"})["task_id"]  # another key: no wait
    shown = api.get(f"/api/v1/tasks/{second}", token=READER).json()
    assert shown["WaitingFor"]["Kind"] == "lock" and shown["WaitingFor"]["Key"] == "cluster:eu"
    assert shown["Lock"]["State"] == "waiting" and shown["Runs"] == []
    assert api.get(f"/api/v1/tasks/{first}").json()["Lock"]["State"] == "held"
    assert api.get(f"/api/v1/tasks/{other}").json()["WaitingFor"] is None
    listed = {t["TaskId"]: t for t in api.get("/api/v1/tasks", token=READER).json()["items"]}
    assert listed[second]["WaitingFor"]["Key"] == "cluster:eu" and listed[first]["WaitingFor"] is None

    locks = api.get("/api/v1/locks", token=READER).json()["items"]
    assert [(lock["key"], [h["task_id"] for h in lock["holders"]], [w["task_id"] for w in lock["waiters"]])
            for lock in locks] == [("cluster:eu", [first], [second]), ("cluster:us", [other], [])]
    assert [lock["key"] for lock in api.get("/api/v1/locks", key="cluster:us").json()["items"]] == ["cluster:us"]
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'api.db'}"}
    cli = CliRunner().invoke(main, ["locks"], env=env)
    assert cli.exit_code == 0, cli.output
    assert "cluster:eu  1/1 held, 1 waiting" in cli.stdout and f"waiting {second}" in cli.stdout
    assert json.loads(CliRunner().invoke(main, ["locks", "--json"], env=env).stdout)[0]["waiters"][0]["task_id"] == second
    shown_cli = CliRunner().invoke(main, ["get", second], env={**env, "BATON_FLOWS_PATH": str(tmp_path / "flows.yaml")})
    assert "waiting for lock cluster:eu" in shown_cli.stdout, shown_cli.output

    done = api.step(first)  # the holder ends: its final change owes the lock table a release
    publisher = OutboxPublisher(api.store, api.broker, time.time)
    try:
        publisher.flush(done)
    finally:
        publisher.stop()
    started = api.get(f"/api/v1/tasks/{second}").json()
    assert started["WaitingFor"] is None and started["Lock"]["State"] == "held" and len(started["Runs"]) == 1
    assert api.get(f"/api/v1/tasks/{first}").json()["Lock"]["State"] == "released"
    locks = api.get("/api/v1/locks").json()["items"]
    assert [(lock["key"], [h["task_id"] for h in lock["holders"]]) for lock in locks][0] == ("cluster:eu", [second])


def test_a_lock_key_naming_a_missing_parameter_is_a_422_naming_it(api):
    response = api.client.post("/api/v1/tasks", json={"task_type": "exclusive", "parameters": {}},
                               headers={"Authorization": f"Bearer {READER}"})
    assert response.status_code in (401, 403)  # a reader may not submit; now as an operator:
    response = api.client.post("/api/v1/tasks", json={"task_type": "exclusive", "parameters": {}},
                               headers={"Authorization": "Bearer operator-token-0123456789"})
    assert response.status_code == 422, response.text
    assert "parameters.cluster" in response.text and "lock key" in response.text


def test_a_delayed_task_with_a_lock_shows_when_it_starts_and_asks_for_its_lock_only_then(api):
    start = time.time() + 3600
    task_id = api.create("exclusive", parameters={"cluster": "eu"}, start_at=start)["task_id"]
    shown = api.get(f"/api/v1/tasks/{task_id}").json()
    assert shown["ScheduledFor"] == pytest.approx(start) and shown["Lock"]["State"] == "waiting"
    assert api.get("/api/v1/locks").json()["items"] == []  # not in line before its start


def test_every_key_the_locks_list_shows_can_be_looked_up_and_none_is_longer_than_the_lookup_takes(api):
    # A newline, a NUL, a bidi override in a value: the key shows them as escapes, on one line.
    api.create("exclusive", parameters={"cluster": "eu\nwest\x00\u202e1"})
    listed = [lock["key"] for lock in api.get("/api/v1/locks", token=READER).json()["items"]]
    assert listed == ["cluster:eu\\nwest\\x00\\u202e1"]
    for key in listed:
        found = api.get("/api/v1/locks", token=READER, key=key)
        assert found.status_code == 200 and [lock["key"] for lock in found.json()["items"]] == [key], found.text
    # A key longer than the lookup takes is refused at submission, naming the parameter; nothing is written.
    before = len(api.store.list_tasks(limit=100))
    refused = api.client.post("/api/v1/tasks", json={"task_type": "exclusive", "parameters": {"cluster": "x" * 60_000}},
                              headers={"Authorization": "Bearer operator-token-0123456789"})  # fmt: skip
    assert refused.status_code == 422, refused.text[:300]
    (field,) = refused.json()["error"]["fields"]
    assert field["path"] == "parameters.cluster" and "more than 256" in field["message"], field
    assert len(api.store.list_tasks(limit=100)) == before
    assert api.create("exclusive", parameters={"cluster": "y" * 248})["task_id"]  # "cluster:" and 248: exactly 256


def test_a_lock_key_template_longer_than_a_key_may_be_is_refused_at_load(tmp_path):
    from common.errors import FlowError
    from common.flows import load_flows

    path = tmp_path / "flows.yaml"
    path.write_text(LOCK_FLOWS.replace('"cluster:{cluster}"', '"' + "c" * 300 + ':{cluster}"'))
    with pytest.raises(FlowError) as raised:
        load_flows(path)
    line = LOCK_FLOWS.splitlines().index('    lock: {key: "cluster:{cluster}"}') + 1
    assert raised.value.problems == [f"{path}:{line}: task_types.exclusive.lock.key: string should have at most "
                                     f"256 characters"]


STEP_LOCK_FLOWS = FLOWS + """
  per_host:
    parameters:
      hosts: {type: array, default: []}
      zone: {type: string, default: a}
    steps:
      - name: restart
        for_each: hosts
        lock: {key: "host:{item}"}
        normal: {module: monitor, command: noop}
      - name: zone
        lock: {key: "zone:{zone}"}
        normal: {module: monitor, command: noop}
"""


def test_a_step_lock_key_the_submission_makes_too_long_is_refused_naming_the_item_or_the_parameter(tmp_path):
    app, store, broker = open_api(tmp_path, flows=STEP_LOCK_FLOWS)
    with TestClient(app) as client:
        api = Api(client, store, broker)
        for parameters, path in (({"hosts": ["h1", "h" * 300]}, "parameters.hosts[1]"), ({"zone": "z" * 300}, "parameters.zone")):
            refused = client.post("/api/v1/tasks", json={"task_type": "per_host", "parameters": parameters},
                                  headers={"Authorization": "Bearer operator-token-0123456789"})  # fmt: skip
            assert refused.status_code == 422, refused.text[:300]
            (field,) = refused.json()["error"]["fields"]
            assert field["path"] == path and "lock key too long" in field["message"], field
        assert store.list_tasks(limit=10) == []
        assert api.create("per_host", parameters={"hosts": ["h" * 251]})["task_id"]  # "host:" and 251: 256
    store.close()
    broker.close()
