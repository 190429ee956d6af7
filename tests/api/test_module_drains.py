"""Drain and undrain over REST: the operator role, who and why stored, bad input named, the
modules view, and a held run shown as the task's `WaitingFor` (kind drain)."""

from __future__ import annotations

import time

from common.engine.document import StepMessage
from common.engine.gates.drain.changes import drain_hold
from common.engine.core.entries import Timing
from common.store.tasks.mutate import mutate
from tests.api.support import OPERATOR, READER, SUBMITTER, auth


def post(api, module: str, action: str, body: object, token: str = OPERATOR):
    return api.client.post(f"/api/v1/modules/{module}/{action}", json=body, headers=auth(token))


def test_an_operator_drains_and_undrains_with_who_and_why_kept(api):
    drained = post(api, "mysql", "drain", {"reason": "deploy 1.4"})
    assert drained.status_code == 200, drained.text
    assert {k: drained.json()[k] for k in ("module", "drained", "actor", "reason", "version")} == {
        "module": "mysql", "drained": True, "actor": "olga", "reason": "deploy 1.4", "version": 1}
    listed = api.get("/api/v1/modules", token=READER).json()["items"]  # no worker live: shown, it is drained
    assert [(m["module"], m["live"], m["drain"]["drained"], m["drain"]["reason"]) for m in listed] == [
        ("mysql", False, True, "deploy 1.4")]
    undrained = post(api, "mysql", "undrain", {"reason": "1.4 is out"}).json()
    assert (undrained["drained"], undrained["actor"], undrained["reason"], undrained["version"]) == (
        False, "olga", "1.4 is out", 2)
    assert api.get("/api/v1/modules", token=READER).json()["items"] == []  # not live, not drained
    (shown,) = api.get("/api/v1/modules", token=READER, stale="true").json()["items"]
    assert shown["drain"]["actor"] == "olga" and shown["drain"]["drained"] is False


def test_only_an_operator_may_drain(api):
    assert post(api, "mysql", "drain", {"reason": "x"}, token=READER).status_code == 403
    assert post(api, "mysql", "drain", {"reason": "x"}, token=SUBMITTER).status_code == 403
    assert api.client.post("/api/v1/modules/mysql/drain", json={"reason": "x"}).status_code == 401


def test_bad_requests_name_the_module_or_the_field(api):
    unknown = post(api, "mysqll", "drain", {"reason": "deploy"})
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == "no such module in flows.yaml (its modules: monitor, mysql, resource)"
    assert unknown.json()["error"]["fields"][0]["path"] == "module"
    for body, field in (({"reason": "   "}, "reason"), ({}, "reason"), ({"reason": "x", "force": True}, "force"),
                        (["x"], "(root)")):
        refused = post(api, "mysql", "drain", body)
        assert refused.status_code == 422, body
        assert any(field in f["path"] for f in refused.json()["error"]["fields"]), refused.json()


def test_a_run_held_by_a_drained_module_shows_as_the_task_s_wait(api):
    task_id = api.create()["task_id"]  # step 0 waits in queue "resource"
    task = api.store.get(task_id)
    (run,) = task.Runs
    step = task.Steps[run.Cursor]
    message = StepMessage(TaskId=task_id, Cursor=0, Type=run.Phase, Module="resource", Command=step.NormalCommand,
                          Timeout=5, Retry=0, DispatchId=run.DispatchId, Attempt=run.Attempt)  # fmt: skip
    now = time.time()
    mutate(api.store, task_id, lambda t: drain_hold(t, message, "resource", "olga", "deploy 2.0", Timing(now)))
    shown = api.get(f"/api/v1/tasks/{task_id}", token=READER).json()
    assert shown["WaitingFor"] == {"Kind": "drain", "Key": "resource", "Since": now, "TaskId": None,
                                   "RecheckAt": None, "Until": None}
    (event,) = [e for e in shown["History"] if e["Event"] == "waiting_for_drain"]
    assert event["Actor"] == "olga" and event["Message"] == "module resource drained by olga: deploy 2.0"
    (summary,) = api.get("/api/v1/tasks", token=READER).json()["items"]
    assert summary["WaitingFor"]["Kind"] == "drain"
    assert api.store.get(task_id).WaitingFor is None  # derived for the view, never stored


def test_a_dry_run_says_which_module_is_drained(api):
    assert post(api, "mysql", "drain", {"reason": "deploy 1.4"}).status_code == 200
    body = {"task_type": "create_db", "parameters": {"name": "db1"}, "dry_run": True}
    plan = api.client.post("/api/v1/tasks", json=body, headers=auth()).json()
    assert {m["module"]: m["drained"] for m in plan["modules"]} == {"mysql": True, "resource": False}
    assert "module mysql is drained: its steps would wait until it is undrained" in plan["warnings"]
    assert post(api, "mysql", "undrain", {"reason": "done"}).status_code == 200
    plan = api.client.post("/api/v1/tasks", json=body, headers=auth()).json()
    assert not any(m["drained"] for m in plan["modules"]) and not any("drained" in w for w in plan["warnings"])


def test_a_second_drain_is_refused_naming_who_drained_and_an_undrain_needs_a_drain(api):
    never = post(api, "mysql", "undrain", {"reason": "nothing to let go"})
    assert never.status_code == 409 and never.json()["error"]["message"] == "module mysql is not drained (never drained)"
    assert post(api, "mysql", "drain", {"reason": "deploy 1.4"}).status_code == 200
    again = post(api, "mysql", "drain", {"reason": "deploy 1.5"})
    assert again.status_code == 409, again.text
    assert again.json()["error"]["message"].startswith("module mysql is drained already (by olga at ")
    (shown,) = api.get("/api/v1/modules", token=READER).json()["items"]
    assert (shown["drain"]["reason"], shown["drain"]["version"]) == ("deploy 1.4", 1)  # the first drain's, kept
    assert post(api, "mysql", "undrain", {"reason": "1.4 is out"}).status_code == 200
    twice = post(api, "mysql", "undrain", {"reason": "again"})
    assert twice.status_code == 409 and twice.json()["error"]["message"].startswith(
        "module mysql is not drained (undrained by olga at ")


def test_a_reason_with_a_control_or_invisible_character_is_refused_and_a_secret_in_it_masked(api):
    for reason in ("deploy\x00", "deploy \u202eevil", "zero\u200bwidth", "bell\x07", "\ufeffbom"):
        refused = post(api, "mysql", "drain", {"reason": reason})
        assert refused.status_code == 422, (reason, refused.text)
        assert refused.json()["error"]["fields"][0]["path"].endswith("reason"), refused.text
    assert api.get("/api/v1/modules", token=READER, stale="true").json()["items"] == []  # nothing written
    drained = post(api, "mysql", "drain", {"reason": "deploy 1.4\nrotate token: abc123 and mysql://u:pw123@db/x"})
    assert drained.status_code == 200, drained.text
    assert drained.json()["reason"] == "deploy 1.4\nrotate token: *** and mysql://u:***@db/x"
    assert "abc123" not in api.get("/api/v1/modules", token=READER).text
    # The same refusals on a task's operator action (its reason goes into the history).
    task_id = api.create()["task_id"]
    assert api.act(task_id, "cancel", reason="stop \u2066now").status_code == 422
