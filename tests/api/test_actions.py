"""POST /api/v1/tasks/{id}/cancel | retry | retry-rollback | compensate: who, why, and every
status a state that does not fit gets."""

from __future__ import annotations

import pytest

from common.engine.states import StepState, TaskStatus
from common.store.tasks.mutate import mutate
from common.engine.core.entries import Timing, finish_attempt
from tests.api.support import OK, READER, SECRET, SUBMITTER, auth
from tests.support.builders import only_run
from tests.support.cluster import wait_until


def events(task: dict) -> list[tuple[str, str | None, str]]:
    return [(e["Event"], e["Actor"], e["Message"]) for e in task["History"]]


def test_cancel_a_task_not_started_ends_it_at_once(api):
    task_id = api.create()["task_id"]
    response = api.act(task_id, "cancel", "ordered by mistake")
    assert response.status_code == 200
    task = response.json()
    assert task["TaskStatus"] == TaskStatus.ROLLED_BACK == 4
    assert task["TaskMessage"] == "rolled back: cancelled by olga: ordered by mistake"
    assert ("cancel_requested", "olga", "ordered by mistake") in events(task)
    assert task["Steps"][0]["State"] == "cancelled"


def test_cancel_a_running_step_rolls_back_after_it(api):
    task_id = api.create()["task_id"]
    api.step(task_id, finish=False)  # step 0 claimed and running
    task = api.act(task_id, "cancel", "wrong region").json()
    assert task["TaskStatus"] == TaskStatus.RUNNING and task["CancelRequested"]["Actor"] == "olga"
    dispatch = only_run(api.store.get(task_id)).DispatchId
    # The module's outcome arrives after the cancel: success, yet the step is rolled back.
    after = mutate(api.store, task_id, lambda t: finish_attempt(t, dispatch, "worker", OK, Timing(t.TimeCreate + 1)))
    assert after.TaskStatus is TaskStatus.ROLLING_BACK and after.Steps[0].State is StepState.ROLLING_BACK


def test_cancel_with_stop_running_stops_the_claimed_step_now(api):
    task_id = api.create()["task_id"]
    api.step(task_id, finish=False)  # step 0 claimed and running
    dispatch = only_run(api.store.get(task_id)).DispatchId
    response = api.client.post(f"/api/v1/tasks/{task_id}/cancel", headers=auth(),
                               json={"reason": "runaway", "stop_running": True})
    assert response.status_code == 200, response.text
    task = response.json()
    # Stopped: it may have done part of its work, so its rollback is dispatched at once.
    assert task["TaskStatus"] == TaskStatus.ROLLING_BACK and task["Steps"][0]["State"] == "rolling_back"
    assert [(r["Cursor"], r["Phase"]) for r in task["Runs"]] == [(0, 1)]
    late = mutate(api.store, task_id, lambda t: finish_attempt(t, dispatch, "worker", OK, Timing(t.TimeCreate + 1)))
    assert "stale dispatch" in late.reason  # the stopped run's outcome is refused (and its lease)
    refused = api.client.post(f"/api/v1/tasks/{task_id}/retry", headers=auth(),
                              json={"reason": "x", "stop_running": True})
    assert refused.status_code == 422 and "cancel only" in refused.text


def test_retry_a_rolled_back_task_runs_its_flow_again_from_step_0(api):
    task_id = api.rolled_back()
    response = api.act(task_id, "retry", "database host is back")
    assert response.status_code == 200
    task = response.json()
    assert task["TaskStatus"] == TaskStatus.NOT_STARTED and task["Generation"] == 1
    assert [s["State"] for s in task["Steps"]] == ["running", "waiting"]
    assert ("retried", "olga", "database host is back") in events(task)
    assert api.broker.queue_depth("resource") >= 1  # step 0 dispatched again
    api.step(task_id)
    api.step(task_id)
    assert api.store.get(task_id).TaskStatus is TaskStatus.SUCCESS


def test_retry_rollback_and_compensate_a_failed_rollback(api):
    first = api.rollback_failed()
    task = api.act(first, "retry-rollback", "disk freed").json()
    assert task["TaskStatus"] == TaskStatus.ROLLING_BACK and task["Steps"][1]["State"] == "rolling_back"
    assert ("rollback_retried", "olga", "disk freed") in events(task)

    second = api.rollback_failed()
    task = api.act(second, "compensate", "dropped the database by hand").json()
    assert task["Steps"][1]["State"] == "compensated"
    assert task["Steps"][1]["RollbackMessage"] == "compensated by hand by olga: dropped the database by hand"
    assert [(r["Cursor"], r["Phase"]) for r in task["Runs"]] == [(0, 1)]
    api.step(second)
    assert api.store.get(second).TaskStatus is TaskStatus.ROLLED_BACK


ACTIONS = ["cancel", "retry", "retry-rollback", "compensate"]


@pytest.mark.parametrize(
    "make, action",
    [
        ("succeeded", "cancel"), ("rolled_back", "cancel"), ("rolled_back", "retry-rollback"),
        ("rolled_back", "compensate"), ("running", "retry"), ("succeeded", "retry"),
        ("rollback_failed", "retry"), ("rollback_failed", "cancel"), ("not_started", "compensate"),
    ],
)  # fmt: skip
def test_an_action_that_does_not_fit_the_state_is_409(api, make, action):
    task_id = {
        "succeeded": lambda: _succeeded(api),
        "rolled_back": api.rolled_back,
        "rollback_failed": api.rollback_failed,
        "running": lambda: _running(api),
        "not_started": lambda: _not_started(api),
    }[make]()
    before = api.store.get(task_id)
    response = api.act(task_id, action)
    assert response.status_code == 409, response.text
    assert response.json()["error"]["code"] == "conflict" and response.json()["error"]["message"]
    assert api.store.get(task_id) == before  # nothing written


def test_cancelling_twice_is_409(api):
    task_id = _running(api)
    assert api.act(task_id, "cancel").status_code == 200
    again = api.act(task_id, "cancel")
    assert again.status_code == 409 and "already requested by olga" in again.json()["error"]["message"]


@pytest.mark.parametrize("action", ACTIONS)
def test_unknown_task_is_404(api, action):
    assert api.act("no-such-task", action).status_code == 404


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("token", [READER, SUBMITTER])
def test_actions_need_the_operator_role(api, action, token):
    task_id = api.create()["task_id"]
    response = api.act(task_id, action, token=token)
    assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"


@pytest.mark.parametrize("action", ACTIONS)
def test_actions_need_a_token(api, action):
    response = api.client.post(f"/api/v1/tasks/x/{action}", json={"reason": "r"})
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("body", [{}, {"reason": ""}, {"reason": "   "}, {"reason": "x", "why": "y"}, {"reason": 5}])
def test_a_reason_is_required(api, body):
    task_id = api.create()["task_id"]
    response = api.client.post(f"/api/v1/tasks/{task_id}/cancel", json=body, headers=auth())
    assert response.status_code == 422
    assert response.json()["error"]["fields"]


def _succeeded(api) -> str:
    task_id = api.create()["task_id"]
    api.step(task_id)
    api.step(task_id)
    assert api.store.get(task_id).TaskStatus is TaskStatus.SUCCESS
    return task_id


def _not_started(api) -> str:
    """A task just created, its start message sent: the app's relay sends it after the answer,
    and marking it sent changes the task, which at load came between the test's two reads."""
    task_id = api.create()["task_id"]
    wait_until(lambda: not api.store.get(task_id).Outbox, 0, f"task {task_id}'s start sent")
    return task_id


def _running(api) -> str:
    task_id = api.create()["task_id"]
    api.step(task_id, finish=False)
    return task_id


def test_the_helpers_reach_the_states_they_name(api):
    assert api.store.get(api.rolled_back()).TaskStatus is TaskStatus.ROLLED_BACK
    assert api.store.get(api.rollback_failed()).TaskStatus is TaskStatus.ROLLBACK_FAILED


def test_a_reason_quoting_a_secret_is_stored_scrubbed(api):
    task_id = api.create(parameters={"name": "db1", "admin_password": SECRET})["task_id"]
    answer = api.act(task_id, "cancel", reason=f"password {SECRET} was leaked")
    assert answer.status_code == 200, answer.text
    stored = api.store.get(task_id).model_dump(mode="json")
    for kept in ("Parameters", "SubmittedParameters"):  # the commands need it there
        stored.pop(kept)
    assert SECRET not in str(stored)
    assert "password *** was leaked" in str(stored)
