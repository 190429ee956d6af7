"""The step actions route at the API's edge, in process: `POST /tasks/{id}/steps/{step}/actions/
{action}` names what it refuses (404 with the step or action, 422 a missing reason, 403 a read
token or a role the step does not name, 409 a second decision), and the task view offers the
actions while the step waits and says what for."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.api.support import FLOWS, OPERATOR, READER, SUBMITTER, Api, auth, open_api

APPROVAL = """
  guarded:
    steps:
      - name: ask
        approve: {count: 2, roles: [operator], not_submitter: true}
"""


@pytest.fixture
def api(tmp_path) -> Iterator[Api]:
    app, store, broker = open_api(tmp_path, flows=FLOWS.rstrip("\n") + "\n" + APPROVAL.lstrip("\n"))
    with TestClient(app) as client:
        yield Api(client, store, broker)
    store.close()
    broker.close()


def act(api: Api, task_id: str, token: str = OPERATOR, step: str = "ask", action: str = "approve",
        body: dict | None = None):  # type: ignore[type-arg]
    return api.client.post(f"/api/v1/tasks/{task_id}/steps/{step}/actions/{action}",
                           json={"reason": "checked"} if body is None else body, headers=auth(token))


def test_the_route_names_what_it_refuses_and_counts_each_person_once(api: Api) -> None:
    created = api.client.post("/api/v1/tasks", json={"task_type": "guarded", "parameters": {}}, headers=auth(SUBMITTER))
    assert created.status_code == 201, created.text
    task_id = created.json()["task_id"]
    shown = api.get(f"/api/v1/tasks/{task_id}").json()
    assert shown["SubmittedBy"] == "sam" and shown["WaitingFor"]["Key"] == "ask: 2 more approvals by operator"
    assert [a["Name"] for a in shown["Steps"][0]["Shown"]["Actions"]] == ["approve", "reject"]

    missing = act(api, task_id, step="nope")
    assert missing.status_code == 404 and missing.json()["error"]["fields"][0]["path"] == "step"
    for spelled in ("00", "01"):  # not step 0 or 1: an index has one spelling
        zeros = act(api, task_id, step=spelled)
        assert zeros.status_code == 422 and zeros.json()["error"]["fields"][0]["path"] == "path.step", zeros.text
        assert repr(spelled) in zeros.json()["error"]["fields"][0]["message"]
    assert act(api, task_id, step="1").status_code == 404  # the task has step 0 only
    unknown = act(api, task_id, action="bless")
    assert unknown.status_code == 404 and unknown.json()["error"]["fields"][0]["path"] == "action"
    assert unknown.json()["error"]["message"] == "step ask (approve) has no action 'bless' (its actions: approve, reject)"
    assert act(api, "no-such-task").status_code == 404
    assert act(api, task_id, body={}).status_code == 422
    assert act(api, task_id, body={"reason": "x", "extra": 1}).status_code == 422
    assert act(api, task_id, token=READER).status_code == 403  # a read token changes nothing
    refused = act(api, task_id, token=SUBMITTER)  # the submitter, and a submit token besides
    assert refused.status_code == 403 and "role operator" in refused.json()["error"]["message"]
    assert act(api, task_id).status_code == 200
    again = act(api, task_id, action="reject")
    assert again.status_code == 409 and "decided already" in again.json()["error"]["message"]
    after = api.store.get(task_id)
    assert [(d.Actor, d.Decision) for d in after.Steps[0].Decisions] == [("olga", "approve")]
    assert after.Runs[0].State.value == "parked"


def test_a_rejected_approval_step_reads_rejected_and_its_document_stays_as_old_readers_know_it(api: Api) -> None:
    created = api.client.post("/api/v1/tasks", json={"task_type": "guarded", "parameters": {}}, headers=auth(SUBMITTER))
    task_id = created.json()["task_id"]
    answer = act(api, task_id, action="reject", body={"reason": "not during the sale"})
    assert answer.status_code == 200, answer.text
    step = api.get(f"/api/v1/tasks/{task_id}").json()["Steps"][0]
    assert step["Shown"]["State"] == "rejected", step["Shown"]
    assert step["State"] in ("failed", "skipped")  # stored as before: a reader of the previous version reads it
    listed = api.get("/api/v1/tasks", task_type="guarded").json()["items"]
    assert [t["StepStates"] for t in listed if t["TaskId"] == task_id] == [["rejected"]], listed
    approved = api.client.post("/api/v1/tasks", json={"task_type": "guarded", "parameters": {}}, headers=auth(SUBMITTER))
    assert api.get(f"/api/v1/tasks/{approved.json()['task_id']}").json()["Steps"][0]["Shown"]["State"] is None


def test_the_plan_describes_an_approval_step_as_its_kind_does(api: Api) -> None:
    planned = api.client.post("/api/v1/tasks", json={"task_type": "guarded", "parameters": {}, "dry_run": True},
                              headers=auth(SUBMITTER))
    assert planned.status_code == 200, planned.text
    (step,) = planned.json()["steps"]
    assert (step["kind"], step["note"], step["normal"]) == ("approve", "approval: 0/2 by operator", None)


def test_the_event_stream_sees_no_change_in_a_wait_that_did_not_move(tmp_path) -> None:
    # A task waiting for approval while a branch's items run in records of their own: the stream
    # compares the wait it showed with the wait now, which is the approval's, not a drain's.
    from oss.api.routers.events import _wait_changed
    from common.secrets.task_views import masked_task_view

    flows = FLOWS.rstrip("\n") + "\n" + """
  parallel:
    parameters:
      hosts: {type: array, required: true}
    steps:
      - name: ask
        after: []
        approve: {count: 1}
      - name: each
        after: []
        for_each: hosts
        normal: {module: resource, command: noop}
"""
    app, store, broker = open_api(tmp_path, flows=flows)
    try:
        with TestClient(app) as client:
            created = client.post("/api/v1/tasks", json={"task_type": "parallel", "parameters": {"hosts": [1, 2]}},
                                  headers=auth(SUBMITTER))
            assert created.status_code == 201, created.text
            task = store.get(created.json()["task_id"])
            items = app.state.baton.items
            assert task.Steps[1].ItemsOpen and items is not None  # its items are kept in records
            shown = [masked_task_view(task).get("WaitingFor")]
            assert shown[0]["Kind"] == "step"
            assert _wait_changed(task, items, shown, time.time()) is False
    finally:
        store.close()
        broker.close()


def test_a_step_action_s_reason_is_masked_as_an_operator_action_s(api: Api, capsys) -> None:
    """`password=...` or a URL's password in the reason of an approval: stored, shown and logged masked."""
    created = api.client.post("/api/v1/tasks", json={"task_type": "guarded", "parameters": {}}, headers=auth(SUBMITTER))
    task_id = created.json()["task_id"]
    answer = act(api, task_id, body={"reason": "checked, password=hunter2hunter, mysql://app:url-pw-7f3a9@db/x"})
    assert answer.status_code == 200, answer.text
    shown = api.get(f"/api/v1/tasks/{task_id}").text
    stored = api.store.get(task_id).model_dump_json()
    for text in (answer.text, shown, stored, *capsys.readouterr()):
        assert "hunter2hunter" not in text and "url-pw-7f3a9" not in text
    assert "password=***" in shown
