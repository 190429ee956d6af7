"""The callback route (`POST /api/v1/callbacks/{token}`, docs/design/callbacks.md) on the API:
taken without an API token, success merged, failure rolled back, heartbeat, an answer kept while
the command runs, refusals 404/409/410 that change nothing and name nothing of the task, bad
bodies 422 naming the field, the rate per address 429; the token never in a log line."""

from __future__ import annotations

import time

import pytest

from common.engine.commands import await_callback, new_token, open_callback, parse_await, token_hash
from common.engine.core.entries import AttemptResult, Refusal, Timing, finish_attempt
from common.engine.states import ResultCode, RunState, StepState, TaskStatus
from common.store.tasks.mutate import mutate
from tests.api.support import SECRET, Api
from tests.support.builders import only_run


def waiting(api: Api, timeout: float = 3600, heartbeat: float | None = None, park: bool = True) -> tuple[str, str]:
    """A create_db task whose step 1's command asked for a token and (park) answered
    await_callback, as a module would: the task id and the token."""
    task_id = api.create(parameters={"name": "db1", "admin_password": SECRET})["task_id"]
    api.step(task_id)
    task = api.step(task_id, finish=False)
    token = new_token(task_id)
    run = only_run(task)
    written = mutate(api.store, task_id, lambda t: open_callback(t, run.DispatchId, "worker", token_hash(token)))
    assert not isinstance(written, Refusal), written
    if park:
        asked = parse_await(await_callback(timeout, heartbeat))
        result = AttemptResult(ResultCode.OK, callback=asked)  # type: ignore[arg-type]
        parked = mutate(api.store, task_id, lambda t: finish_attempt(t, run.DispatchId, "worker", result, Timing(time.time())))
        assert not isinstance(parked, Refusal), parked
    return task_id, token


def back(api: Api, token: str, action: str = "succeed", **body):
    return api.client.post(f"/api/v1/callbacks/{token}", json={"action": action, **body})


def test_success_without_an_api_token_merges_the_output_and_a_repeat_is_refused_409(api: Api, capsys) -> None:
    task_id, token = waiting(api)
    assert api.store.get(task_id).Runs[0].State is RunState.PARKED
    answer = back(api, token, output={"ticket": "CHG-1"}, message="done")
    assert answer.status_code == 200 and answer.json() == {"accepted": "succeed", "state": "succeeded"}
    task = api.store.get(task_id)
    assert task.Parameters["ticket"] == "CHG-1" and task.Steps[1].State is StepState.SUCCEEDED
    assert task.TaskStatus is TaskStatus.SUCCESS  # create_db has two steps
    version = task.Version
    again = back(api, token, "fail", message="late")
    assert again.status_code == 409 and "answered already" in again.json()["error"]["message"]
    assert api.store.get(task_id).Version == version
    assert token not in capsys.readouterr().err + capsys.readouterr().out


def test_failure_rolls_the_task_back(api: Api) -> None:
    task_id, token = waiting(api)
    answer = back(api, token, "fail", message="the board said no:\n\tnot in the freeze", retryable=False)
    assert answer.status_code == 200 and answer.json()["state"] == "failed"
    task = api.store.get(task_id)
    assert task.TaskStatus is TaskStatus.ROLLING_BACK and "the board said no" in task.TaskMessage


def test_a_heartbeat_moves_the_deadline_and_after_the_timeout_the_token_is_gone_410(api: Api) -> None:
    task_id, token = waiting(api, timeout=3600, heartbeat=60)
    before = api.store.get(task_id).Runs[0]
    answer = back(api, token, "heartbeat")
    assert answer.status_code == 200 and answer.json() == {"accepted": "heartbeat", "state": "waiting"}
    after = api.store.get(task_id).Runs[0]
    assert before.Callback.Beat is None and after.Deadline == after.Callback.Beat + 60 >= before.Deadline
    from common.engine.changes import expire

    lapsed = mutate(api.store, task_id, lambda t: expire(t, Timing(time.time() + 120)))
    assert not isinstance(lapsed, Refusal) and "no callback heartbeat for 1m" in lapsed.TaskMessage
    gone = back(api, token)
    assert gone.status_code == 410 and "timed out" in gone.json()["error"]["message"]


def test_an_answer_while_the_command_runs_is_kept(api: Api) -> None:
    task_id, token = waiting(api, park=False)
    assert back(api, token, "heartbeat").json() == {"accepted": "heartbeat", "state": "running"}
    kept = back(api, token, output={"ticket": "CHG-2"})
    assert kept.status_code == 200 and kept.json()["state"] == "kept"
    assert back(api, token).status_code == 409


def test_unknown_forged_and_malformed_tokens_are_404_word_for_word_and_name_nothing(api: Api) -> None:
    task_id, token = waiting(api)
    version = api.store.get(task_id).Version
    forged = token[:-1] + ("B" if token.endswith("A") else "A")  # one character off (never the token itself)
    answers = [back(api, t) for t in (new_token(task_id), new_token("0" * 32), "not-a-token", forged)]
    assert {a.status_code for a in answers} == {404}
    assert len({a.text for a in answers}) == 1
    assert all(task_id not in a.text and SECRET not in a.text for a in answers)
    assert api.store.get(task_id).Version == version


@pytest.mark.parametrize("body, field", [
    ({"action": "finish"}, "action"),
    ({"action": "succeed", "output": {"_baton": {}}}, "output._baton"),
    ({"action": "succeed", "output": {"a": "x" * 70_000}}, "output.a"),
    ({"action": "fail", "retryable": "yes"}, "retryable"),
    ({"action": "succeed", "extra": 1}, "extra"),
    # the other system's words reach the history, `baton get` and the console: as a reason's rules
    ({"action": "fail", "message": "no\x1b[2J"}, "message"),
    ({"action": "fail", "message": "rejected \u202eby nobody"}, "message"),
    ({"action": "fail", "message": "nul\x00"}, "message"),
])
def test_a_bad_body_is_422_naming_the_field_and_changes_nothing(api: Api, body: dict, field: str) -> None:
    task_id, token = waiting(api)
    version = api.store.get(task_id).Version
    answer = api.client.post(f"/api/v1/callbacks/{token}", json=body)
    assert answer.status_code == 422, answer.text
    assert any(f["path"] == field for f in answer.json()["error"]["fields"]), answer.text
    assert token not in answer.text and api.store.get(task_id).Version == version


def test_too_many_callbacks_from_one_address_are_told_to_wait(api: Api) -> None:
    from oss.api.callback_rate import CallbackRate

    api.client.app.state.callback_rate = CallbackRate(rate=0.001, burst=5)  # no refill within the test
    statuses = [back(api, "x" * 10).status_code for _ in range(6)]
    assert statuses == [404] * 5 + [429], statuses
    answer = back(api, "x" * 10)
    assert answer.status_code == 429 and int(answer.headers["Retry-After"]) >= 1


@pytest.mark.parametrize("flood", [
    {"json": {"action": "finish"}},  # invalid body
    {"content": b"{not json", "headers": {"Content-Type": "application/json"}},  # not JSON
])
def test_a_flood_of_bad_bodies_is_rate_limited_before_they_are_checked(api: Api, flood: dict) -> None:
    from oss.api.callback_rate import CallbackRate

    api.client.app.state.callback_rate = CallbackRate(rate=0.001, burst=3)  # no refill within the test
    statuses = [api.client.post("/api/v1/callbacks/" + "x" * 10, **flood).status_code for _ in range(5)]
    assert statuses == [422] * 3 + [429] * 2, statuses
    too_long = api.client.post("/api/v1/callbacks/" + "x" * 400, json={"action": "heartbeat"})
    assert too_long.status_code == 429 and int(too_long.headers["Retry-After"]) >= 1


@pytest.mark.parametrize("park", [True, False], ids=["parked", "kept"])
def test_an_output_may_not_set_a_secret_parameter_422_naming_the_key(api: Api, park: bool) -> None:
    task_id, token = waiting(api, park=park)
    version = api.store.get(task_id).Version
    answer = back(api, token, output={"ticket": "CHG-1", "admin_password": "chosen-by-the-caller"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["fields"][0]["path"] == "output.admin_password", answer.text
    task = api.store.get(task_id)
    assert task.Version == version and task.Parameters["admin_password"] == SECRET and "ticket" not in task.Parameters
    assert back(api, token, output={"ticket": "CHG-1", "name": "db2"}).status_code == 200  # plain ones it may
    assert api.store.get(task_id).Parameters["admin_password"] == SECRET


def test_the_wait_is_shown_in_the_task_view(api: Api) -> None:
    task_id, _ = waiting(api, timeout=4 * 3600, heartbeat=600)
    view = api.get(f"/api/v1/tasks/{task_id}").json()
    assert view["WaitingFor"]["Kind"] == "step"
    assert view["WaitingFor"]["Key"] == "create: a callback (heartbeat every 10m) within 4h"
    assert "Hash" in view["Runs"][0]["Callback"]


@pytest.mark.parametrize("park", [False, True], ids=["kept", "applied"])
def test_a_message_quoting_the_answer_s_own_secret_is_stored_masked(api: Api, park: bool) -> None:
    """Stored masked, not only shown so: a kept answer the command's own outcome replaces takes
    its output away, and with it what a view would know to hide in the history's message."""
    task_id, token = waiting(api, park=park)
    answer = back(api, token, output={"api-key": "callback-key-5e1b"}, message="made, key callback-key-5e1b")
    assert answer.status_code == 200
    said = [event.Message for event in api.store.get(task_id).History if event.Actor == "callback"]
    assert said and all("callback-key-5e1b" not in text for text in said), said
