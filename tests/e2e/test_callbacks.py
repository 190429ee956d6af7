"""Callbacks through real processes (the worked example of docs/guide/callbacks.md): OSS serving
REST, the `baton` CLI as its own process, the guide's `tickets` module (tests/support/
callback_commands.py) and a stand-in resource module, a sweeper, on RabbitMQ and the store.

The other system is this test: it reads the tokens the commands gave out from the stand-in
board and calls back through REST (no API token), the CLI and the Python client. Success merges
its output; failure rolls the task back (the step's own rollback included); heartbeats keep a
wait alive and a missed one times the step out; a retry's new token works and the old one is
refused 410; a repeated callback 409; the async command waits the same way."""

from __future__ import annotations

import time

import pytest

import tests.client.conftest  # noqa: F401  (this checkout's client, not an installed copy: it says why)
from baton_client import BatonClient, Gone
from tests.deploy.support import http, wait_task_final
from tests.support.callback_commands import board_file
from tests.support.cluster import wait_until
from tests.support.callback_deployment import GUIDE_FLOWS, callback_deployment
from tests.support.oss_deployment import baton

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

FLOWS = GUIDE_FLOWS + """\
  change_async:
    parameters:
      summary:   {type: string, required: true}
      wait:      {type: integer, default: 14400}
      heartbeat: {type: integer, default: 600}
    steps:
      - name: approve_change
        normal:   {module: tickets, command: open_change_async}
        rollback: {module: tickets, command: withdraw_change}
  change_first_beat:
    parameters:
      summary:   {type: string, required: true}
      wait:      {type: integer, default: 14400}
      heartbeat: {type: integer, default: 600}
    steps:
      - name: prepare
        normal:   {module: resource, command: check_resource}
        rollback: {module: resource, command: restore_resource}
      - name: approve_change
        normal:   {module: tickets, command: open_change_first_beat_only, retry: 1}
        rollback: {module: tickets, command: withdraw_change}
"""


@pytest.fixture(scope="module")
def deployment(rabbitmq_url, tmp_path_factory, request):
    with callback_deployment(tmp_path_factory.mktemp("callbacks"), rabbitmq_url, request, FLOWS) as deployed:
        yield deployed


def submit(base: str, task_type: str = "change", **parameters: int) -> str:
    status, created = http("POST", f"{base}/api/v1/tasks", {"task_type": task_type,
                                                           "parameters": {"summary": "rotate keys", **parameters}})
    assert status == 201, created
    return created["task_id"]


def task(base: str, task_id: str) -> dict:
    return http("GET", f"{base}/api/v1/tasks/{task_id}")[1]


def parked_token(base: str, task_id: str, attempt: int = 1, cursor: int = 1) -> str:
    """The token the step's command gave out for `attempt`, once the step waits for it."""
    key = f"{task_id}:{cursor}:normal"

    def ready() -> bool:
        shown = task(base, task_id)
        return any(r["State"] == "parked" and r["Attempt"] == attempt for r in shown["Runs"]) \
            and board_file(key).is_file() and len(board_file(key).read_text().split()) >= attempt

    wait_until(ready, 60, f"task {task_id} attempt {attempt} waiting for its callback")
    return board_file(key).read_text().split()[attempt - 1]


def call_back(base: str, token: str, action: str = "succeed", **body) -> tuple[int, dict]:
    return http("POST", f"{base}/api/v1/callbacks/{token}", {"action": action, **body}, token=None)


def test_success_over_rest_merges_the_output_and_a_repeat_is_refused(deployment):
    cluster, base = deployment
    task_id = submit(base)
    token = parked_token(base, task_id)
    waiting = task(base, task_id)
    assert waiting["WaitingFor"]["Key"] == "approve_change: a callback (heartbeat every 10m) within 4h"
    shown = baton(cluster, "get", task_id)
    assert "waiting for step approve_change: a callback" in shown.stdout, shown.stdout
    assert token not in shown.stdout and token not in str(waiting)

    status, answer = call_back(base, token, output={"change_id": "CHG-1042"})
    assert (status, answer) == (200, {"accepted": "succeed", "state": "succeeded"})
    final = wait_task_final(base, task_id)
    assert final["TaskStatusName"] == "SUCCESS" and final["Parameters"]["change_id"] == "CHG-1042"
    assert [(e["Event"], e["Actor"]) for e in final["History"] if e["Cursor"] == 1 and e["Phase"] == 0][-1] == (
        "step_succeeded", "callback")
    status, again = call_back(base, token, "fail")
    assert status == 409 and "answered already" in again["error"]["message"]
    assert wait_task_final(base, task_id)["Version"] == final["Version"]
    assert token not in cluster.logs()


def test_failure_through_the_cli_rolls_the_task_back(deployment):
    cluster, base = deployment
    task_id = submit(base)
    token = parked_token(base, task_id)
    cli = baton(cluster, "callback", token, "--fail", "--message", "rejected by the change board", "--no-retry")
    assert cli.returncode == 0 and "fail: taken; the wait is failed" in cli.stdout, cli.stderr
    final = wait_task_final(base, task_id)
    assert final["TaskStatusName"] == "ROLLED_BACK" and "rejected by the change board" in final["TaskMessage"]
    assert [s["State"] for s in final["Steps"]] == ["rolled_back", "rolled_back", "waiting"]
    assert board_file(f"{task_id}:1:rollback").with_suffix(".withdrawn").is_file()  # its own rollback ran
    late = baton(cluster, "callback", token, "--succeed")
    assert late.returncode == 4 and "answered already" in late.stderr, late.stderr
    unknown = baton(cluster, "callback", token[:-4] + "AAAA", "--heartbeat")
    assert unknown.returncode == 3 and "no such callback token" in unknown.stderr, unknown.stderr


def test_heartbeats_keep_the_wait_alive_through_the_client(deployment):
    _, base = deployment
    # A heartbeat period of 5 s: each beat below (a request, then reading the task until it shows
    # it) must come within one; 2 s was less than a loaded machine took for that.
    task_id = submit(base, heartbeat=5)
    token = parked_token(base, task_id)
    client = BatonClient(base)  # no API token: the callback token is the credential
    beats = []
    # Beat for longer than three heartbeat periods, each beat seen in the task, before succeeding.
    started = task(base, task_id)["Runs"][0]["Since"]
    while not beats or beats[-1] < started + 16:
        assert client.callback(token, "heartbeat").state == "waiting"
        wait_until(lambda: (beat := task(base, task_id)["Runs"][0]["Callback"]["Beat"]) and beat not in beats,
                   30, "the heartbeat recorded")
        beats.append(task(base, task_id)["Runs"][0]["Callback"]["Beat"])
        time.sleep(0.5)  # the other system's own pace
    assert task(base, task_id)["Runs"][0]["State"] == "parked"
    assert client.callback(token, "succeed", output={"change_id": "CHG-7"}).state == "succeeded"
    assert wait_task_final(base, task_id)["TaskStatusName"] == "SUCCESS"


def test_a_missed_heartbeat_times_the_attempt_out_and_the_retry_has_a_token_of_its_own(deployment):
    _, base = deployment
    task_id = submit(base, "change_first_beat", heartbeat=1)  # the retry beats every 10 minutes
    first = parked_token(base, task_id, attempt=1)
    second = parked_token(base, task_id, attempt=2)  # nobody beat: attempt 1 timed out, retried
    assert first != second
    shown = task(base, task_id)
    failed = [e["Message"] for e in shown["History"] if e["Event"] == "attempt_failed" and e["Cursor"] == 1]
    assert failed == ["no callback heartbeat for 1s"]
    with pytest.raises(Gone, match="wait is over"):
        BatonClient(base).callback(first, "succeed")
    assert call_back(base, second, output={"change_id": "CHG-9"})[0] == 200
    final = wait_task_final(base, task_id)
    assert final["TaskStatusName"] == "SUCCESS" and final["Parameters"]["change_id"] == "CHG-9"


def test_the_timeout_with_no_retry_left_rolls_the_task_back(deployment):
    _, base = deployment
    task_id = submit(base, wait=1, heartbeat=1)
    final = wait_task_final(base, task_id)
    assert final["TaskStatusName"] == "ROLLED_BACK" and "no callback within 1s" in final["TaskMessage"]
    assert len(board_file(f"{task_id}:1:normal").read_text().split()) == 2  # each attempt its own token


def test_an_async_command_waits_the_same_way(deployment):
    _, base = deployment
    task_id = submit(base, "change_async")
    token = parked_token(base, task_id, cursor=0)
    assert call_back(base, token, output={"done": True})[0] == 200
    assert wait_task_final(base, task_id)["Parameters"]["done"] is True
