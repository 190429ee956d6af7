"""The limits on a fan-out (docs/limits.md): a step's `max_items` and BATON_INPUT_MAX_ITEMS refuse
a longer list at the edge (422 naming the parameter and the limit, nothing written); a list that
grew past `max_items` through a step's output fails the step that would fan out over it."""

from __future__ import annotations

from common.engine.states import ResultCode, TaskStatus
from common.engine.core.entries import AttemptResult
from common.flows import load_flows
from tests.api.support import Api, auth, open_api
from fastapi.testclient import TestClient

FLOWS = """
version: 1
defaults: {timeout: 60, retry: 0}
task_types:
  fleet:
    parameters:
      hosts: {type: array, default: []}
    steps:
      - name: list_hosts
        normal: {module: m, command: list_hosts}
      - name: restart
        for_each: hosts
        max_items: 3
        normal: {module: m, command: restart}
"""


def open_fleet(tmp_path, **settings) -> tuple[Api, TestClient]:
    app, store, broker = open_api(tmp_path, FLOWS, **settings)
    client = TestClient(app)
    client.__enter__()
    return Api(client, store, broker), client


def submit(api: Api, hosts: list) -> object:
    return api.client.post("/api/v1/tasks", json={"task_type": "fleet", "parameters": {"hosts": hosts}},
                           headers=auth())


def test_the_loader_keeps_max_items_on_the_step_and_the_task_types_show_it(tmp_path):
    (tmp_path / "flows.yaml").write_text(FLOWS)
    assert load_flows(tmp_path / "flows.yaml").get("fleet").steps[1].MaxItems == 3
    api, client = open_fleet(tmp_path)
    try:
        response = api.get("/api/v1/task-types/fleet")
        assert response.status_code == 200, response.text
        assert [s["max_items"] for s in response.json()["steps"]] == [None, 3]
    finally:
        client.__exit__(None, None, None)


def test_a_list_longer_than_the_steps_max_items_is_refused_naming_the_field_and_the_limit(tmp_path):
    api, client = open_fleet(tmp_path)
    try:
        response = submit(api, ["h1", "h2", "h3", "h4"])
        assert response.status_code == 422, response.text
        text = response.text
        assert "parameters.hosts" in text and "4 items" in text and "3" in text and "max_items" in text, text
        assert api.store.list_tasks(limit=10) == []  # nothing written
        assert submit(api, ["h1", "h2", "h3"]).status_code == 201
    finally:
        client.__exit__(None, None, None)


def test_baton_input_max_items_refuses_a_longer_list_at_the_edge(tmp_path):
    api, client = open_fleet(tmp_path, input_max_items=2)
    try:
        response = submit(api, ["h1", "h2", "h3"])
        assert response.status_code == 422, response.text
        assert "parameters.hosts" in response.text and "more than 2" in response.text, response.text
        assert api.store.list_tasks(limit=10) == []
    finally:
        client.__exit__(None, None, None)


def test_a_list_grown_past_max_items_by_a_step_output_fails_the_fan_out_step(tmp_path):
    api, client = open_fleet(tmp_path)
    try:
        task_id = submit(api, []).json()["task_id"]
        grown = AttemptResult(ResultCode.OK, "", {"hosts": [f"h{i}" for i in range(5)]})
        task = api.step(task_id, grown)  # list_hosts answers five hosts; restart takes at most 3
        step = task.Steps[1]
        assert step.Code is ResultCode.FAILED  # and, with no rollback of its own, passed over backward
        assert step.Message == "for_each parameter 'hosts' has 5 items, more than the 3 step 'restart' " \
                               "fans out over (its max_items)"
        assert not step.Items  # no item ran
        assert task.TaskStatus in (TaskStatus.ROLLING_BACK, TaskStatus.ROLLED_BACK)
        assert "restart" in task.TaskMessage and "max_items" in task.TaskMessage
    finally:
        client.__exit__(None, None, None)


WIDE = FLOWS.replace("        max_items: 3\n", "")


def test_a_list_of_exactly_baton_input_max_items_is_accepted_one_more_is_refused(tmp_path):
    app, store, broker = open_api(tmp_path, WIDE)  # the default BATON_INPUT_MAX_ITEMS: 10,000
    with TestClient(app) as client:
        api = Api(client, store, broker)
        exactly = submit(api, [f"h{i}" for i in range(10_000)])
        assert exactly.status_code == 201, exactly.text[:500]
        response = submit(api, [f"h{i}" for i in range(10_001)])
        assert response.status_code == 422, response.text[:500]
        assert "parameters.hosts" in response.text and "more than 10000" in response.text, response.text
        assert len(api.store.list_tasks(limit=10)) == 1
