"""POST /api/v1/tasks/{id}/pause | resume | skip, bulk pause/resume, and a submission's
`after_task`: who, why, each recorded in the history, and the 4xx of what does not fit."""

from __future__ import annotations

import time

import pytest

from common.relay.outbox import OutboxPublisher
from common.engine.states import TaskStatus
from tests.api.support import FAIL, READER, Api, auth
from tests.api.test_actions import events
from tests.api.test_bulk import bulk


def test_pause_then_resume_a_task_recorded_with_the_operator(api: Api) -> None:
    task_id = api.create()["task_id"]
    assert api.broker.queue_depth("resource") == 1
    paused = api.act(task_id, "pause", "db host maintenance").json()
    assert paused["Paused"]["Actor"] == "olga" and paused["Paused"]["Reason"] == "db host maintenance"
    assert paused["Runs"] == [] and paused["Steps"][0]["State"] == "waiting"
    assert ("paused", "olga", "db host maintenance") in events(paused)
    again = api.act(task_id, "pause", "twice")
    assert again.status_code == 409 and "paused already by olga" in again.json()["error"]["message"]
    resumed = api.act(task_id, "resume", "maintenance over").json()
    assert resumed["Paused"] is None and resumed["Steps"][0]["State"] == "running"
    assert ("resumed", "olga", "maintenance over") in events(resumed)
    assert api.broker.queue_depth("resource") == 2  # the withdrawn message (fenced) and the new one
    api.step(task_id)
    api.step(task_id)
    assert api.store.get(task_id).TaskStatus is TaskStatus.SUCCESS


def test_resume_of_a_task_not_paused_is_409_and_pause_needs_the_operator(api: Api) -> None:
    task_id = api.create()["task_id"]
    assert api.act(task_id, "resume").status_code == 409
    assert api.act(task_id, "pause", token=READER).status_code == 403
    assert api.act("nope", "pause").status_code == 404


def test_skip_the_failed_step_of_a_rolled_back_task_runs_the_rest(api: Api) -> None:
    task_id = api.rolled_back()  # step 1 (create) failed
    body = {"reason": "created by hand", "step": 1}
    response = api.client.post(f"/api/v1/tasks/{task_id}/skip", json=body, headers=auth())
    assert response.status_code == 200, response.text
    task = response.json()
    assert task["Generation"] == 1 and task["Steps"][1]["State"] == "operator_skipped"
    assert ("operator_skipped", "olga", "created by hand") in events(task)
    api.step(task_id)
    assert api.store.get(task_id).TaskStatus is TaskStatus.SUCCESS


@pytest.mark.parametrize("body, field, said", [
    ({"reason": "x", "step": 7}, "step", "step 7"), ({"reason": "x", "step": 0, "item": 2}, "item", "item 2"),
    ({"reason": "x"}, "step", ""), ({"reason": "x", "step": -1}, "step", ""), ({"step": 0}, "reason", ""),
])  # fmt: skip
def test_skip_names_a_unit_of_the_task_or_is_422(api: Api, body: dict, field: str, said: str) -> None:
    """422 naming the field (and the value): the body's form, or an index the task does not have;
    nothing changes."""
    task_id = api.rolled_back()
    version = api.store.get(task_id).Version
    response = api.client.post(f"/api/v1/tasks/{task_id}/skip", json=body, headers=auth())
    assert response.status_code == 422, response.text
    fields = response.json()["error"]["fields"]
    assert field in [f["path"] for f in fields] and said in fields[0]["message"], response.text
    assert api.store.get(task_id).Version == version


def test_skip_of_a_step_that_did_not_fail_is_409(api: Api) -> None:
    task_id = api.rolled_back()
    response = api.client.post(f"/api/v1/tasks/{task_id}/skip", json={"reason": "x", "step": 0}, headers=auth())
    assert response.status_code == 409 and "did not fail" in response.text


def test_bulk_pause_and_resume(api: Api) -> None:
    tasks = [api.create(labels={"wave": "2"})["task_id"] for _ in range(2)]
    dry = bulk(api, "pause", labels={"wave": "2"}).json()
    assert sorted(dry["applied"]) == sorted(tasks) and api.store.get(tasks[0]).Paused is None
    assert sorted(bulk(api, "pause", labels={"wave": "2"}, dry_run=False).json()["applied"]) == sorted(tasks)
    assert all(api.store.get(t).Paused.Reason == "maintenance window" for t in tasks)
    assert len(bulk(api, "pause", labels={"wave": "2"}).json()["refused"]) == 2
    resumed = bulk(api, "resume", labels={"wave": "2"}, dry_run=False).json()
    assert sorted(resumed["applied"]) == sorted(tasks) and all(api.store.get(t).Paused is None for t in tasks)


def _flush(api: Api, task_id: str) -> None:
    """What the module that commits a change does next: publish and apply its outbox."""
    publisher = OutboxPublisher(api.store, api.broker, time.time)
    publisher.flush(api.store.get(task_id))
    publisher.stop()


def test_after_task_waits_for_the_task_named_by_its_idempotency_key_then_starts(api: Api) -> None:
    first = api.create(idempotency_key="wave-1")["task_id"]
    second = api.create(after_task="wave-1", parameters={"name": "db2"})["task_id"]
    waiting = api.store.get(second)
    assert waiting.WaitingFor.Kind == "task" and waiting.WaitingFor.TaskId == first and waiting.Runs == []
    assert api.store.get(first).AwaitedBy == [second]
    api.step(first)
    api.step(first)
    _flush(api, first)  # the awaited task's final change wakes the waiter through its outbox
    woken = api.store.get(second)
    assert woken.WaitingFor is None and woken.Steps[0].State == "running"
    assert ("awaited_task_ended", "oss", f"task {first} ended SUCCESS") in events(woken.model_dump(mode="json"))


def test_after_a_task_that_failed_the_waiter_never_starts(api: Api) -> None:
    first = api.create()["task_id"]
    second = api.create(after_task=first, parameters={"name": "db2"})["task_id"]
    api.step(first)
    api.step(first, FAIL)
    api.step(first)
    api.step(first)
    _flush(api, first)
    ended = api.store.get(second)
    assert ended.TaskStatus is TaskStatus.ROLLED_BACK
    assert ended.TaskMessage == f"rolled back: task {first}, which this task waited for, ended ROLLED_BACK: not started"
    late = api.create(after_task=first, parameters={"name": "db3"})  # it had ended already
    assert api.store.get(late["task_id"]).TaskStatus is TaskStatus.ROLLED_BACK


def test_after_an_unknown_task_is_404_naming_the_field(api: Api) -> None:
    response = api.client.post("/api/v1/tasks", headers=auth(),
                               json={"task_type": "create_db", "parameters": {"name": "x"}, "after_task": "nope"})
    assert response.status_code == 404 and api.store.list_tasks(limit=10) == []
    assert [f["path"] for f in response.json()["error"]["fields"]] == ["after_task"]


def test_pause_holds_a_task_that_waits_for_its_lock_and_after_task_combines_with_a_lock(tmp_path) -> None:
    from fastapi.testclient import TestClient

    from tests.api.support import open_api
    from tests.api.test_locks import LOCK_FLOWS

    app, store, broker = open_api(tmp_path, flows=LOCK_FLOWS)
    with TestClient(app) as client:
        api = Api(client, store, broker)
        first = api.create("exclusive", parameters={"cluster": "eu"})["task_id"]
        second = api.create("exclusive", parameters={"cluster": "eu"})["task_id"]
        assert api.act(second, "pause", "hold it").status_code == 200
        api.step(first)  # the holder ends: the lock goes to the paused task, which starts nothing
        _flush(api, first)
        held = api.store.get(second)
        assert held.WaitingFor is None and held.Lock.State == "held" and held.Runs == []
        resumed = api.act(second, "resume", "go").json()
        assert len(resumed["Runs"]) == 1
        # A task type with a lock, after another task: it asks for the lock only once that task
        # succeeded, so it takes no place in the lock's line while it could not start.
        third = api.create("exclusive", parameters={"cluster": "eu"}, after_task=second)["task_id"]
        waiting = api.get(f"/api/v1/tasks/{third}").json()
        assert waiting["WaitingFor"]["Kind"] == "task" and waiting["Lock"]["State"] == "pending"
        (busy,) = api.get("/api/v1/locks").json()["items"]
        assert [h["task_id"] for h in busy["holders"]] == [second] and busy["waiters"] == []
        api.step(second)  # it ends: the lock comes free and the waiter is woken
        _flush(api, second)
        _flush(api, third)  # its wake-up asked for the lock; the lock relay granted it
        started = api.store.get(third)
        assert started.WaitingFor is None and started.Lock.State == "held" and len(started.Runs) == 1
        api.step(third)
        _flush(api, third)
        assert api.store.get(third).TaskStatus is TaskStatus.SUCCESS and api.get("/api/v1/locks").json()["items"] == []
    store.close()
    broker.close()


@pytest.mark.usefixtures("inline_items")
def test_skip_of_an_item_in_a_rolled_back_for_each_step_is_409_and_the_whole_step_can_be(api: Api) -> None:
    """docs/guide/operator-actions.md, "Skip": a rolled-back task runs again with its items fixed anew, so an item of the
    old generation cannot be named; the whole step can."""
    from common.engine.states import Phase
    from tests.support.dag_sim import Simulator
    from tests.unit.test_graph_transitions import fan_out, new

    simulator = Simulator(api.store, lambda t, cursor, item, phase: cursor == 1 and item == 2 and phase is Phase.NORMAL)
    simulator.submit(new(fan_out(), {"hosts": ["h0", "h1", "h2"]}, task_id="fe-skip"))
    simulator.run(lambda n: 0)
    assert api.store.get("fe-skip").TaskStatus is TaskStatus.ROLLED_BACK
    item = api.client.post("/api/v1/tasks/fe-skip/skip", json={"reason": "x", "step": 1, "item": 2}, headers=auth())
    assert item.status_code == 409 and "fixes its items anew" in item.text
    assert [f["path"] for f in item.json()["error"]["fields"]] == ["item"]
    step = api.client.post("/api/v1/tasks/fe-skip/skip", json={"reason": "x", "step": 1}, headers=auth())
    assert step.status_code == 200, step.text
    assert step.json()["Generation"] == 1 and step.json()["Steps"][1]["State"] == "operator_skipped"
