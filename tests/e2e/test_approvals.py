"""Approval steps through real processes (the worked example of docs/guide/approvals.md): OSS serving REST (two of them for the races), the
`baton` CLI as its own process, a module and a sweeper, on RabbitMQ and the store. The task
waits holding no slot and says what for; distinct approvers are counted once each, whichever
OSS they reach; the submitter and a reader are refused; a rejection rolls the task back; the
timeout rejects; a webhook tells each request and decision."""

from __future__ import annotations

import threading

import pytest

from tests.deploy.support import http, wait_task_final
from tests.support.cluster import wait_until
from tests.support.doc_examples import blocks
from tests.support.oss_deployment import baton, oss_deployment
from tests.support.ports import free_port
from tests.support.test_store import cluster_mongo_url
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

TOKEN = {name: f"approvals-{name}-token-0123456789" for name in ("alice", "bob", "carol", "erin", "dave")}
ROLE = {"alice": "operator", "bob": "operator", "carol": "operator", "erin": "submit", "dave": "read"}
TOKENS = ",".join(f"{name}:{token}:{ROLE[name]}" for name, token in TOKEN.items())
SECRET = "approvals-webhook-signing-secret"
# The guide's task type (docs/guide/approvals.md, run here), its webhook added; and one that times out.
(GUIDE,) = blocks("docs/guide/approvals.md", "A step that asks for approval", "yaml")
FLOWS = "version: 1\ndefaults: {timeout: 5, retry: 0}\n" + GUIDE.replace(
    "  drop_db:\n", '  drop_db:\n    notify: {url: "%s"}\n') + """\
  quick_ask:
    steps:
      - name: ask
        approve: {count: 1, timeout: 2s}
"""


@pytest.fixture(scope="module")
def deployment(rabbitmq_url, tmp_path_factory, request):
    receiver = WebhookReceiver(SECRET)
    receiver.start()
    workdir = tmp_path_factory.mktemp("approvals")
    with oss_deployment(workdir, rabbitmq_url, FLOWS % receiver.url, {"resource": "tests.support.standin_commands:resource"},
                        mongo_url=cluster_mongo_url(request),
                        extra_env={"BATON_API_TOKENS": TOKENS, "BATON_WEBHOOK_SECRET": SECRET}) as (cluster, base):
        second = f"http://127.0.0.1:{(port := free_port())}"
        cluster.start_oss(port, name="oss2")
        wait_until(lambda: http("GET", f"{second}/readyz", token=None)[0] == 200, 60, "the second OSS ready")
        yield cluster, base, second, receiver
    receiver.stop()


def submit(base: str, task_type: str = "drop_db", who: str = "alice") -> str:
    status, created = http("POST", f"{base}/api/v1/tasks", {"task_type": task_type, "parameters": {"name": "db1"}}
                           if task_type == "drop_db" else {"task_type": task_type, "parameters": {}}, token=TOKEN[who])
    assert status == 201, created
    return created["task_id"]


def act(base: str, task_id: str, who: str, action: str = "approve", step: str = "ask") -> tuple[int, dict]:
    return http("POST", f"{base}/api/v1/tasks/{task_id}/steps/{step}/actions/{action}",
                {"reason": f"{who} checked the backup"}, token=TOKEN[who])


def waiting(base: str, task_id: str) -> dict:
    task: dict = {}

    def parked() -> bool:
        task.update(http("GET", f"{base}/api/v1/tasks/{task_id}", token=TOKEN["dave"])[1])
        return any(run["State"] == "parked" for run in task.get("Runs", []))

    wait_until(parked, 60, "the approval step waiting")
    return task


def test_two_approvers_through_rest_and_the_cli_let_the_task_go_on(deployment):
    cluster, base, _, receiver = deployment
    task_id = submit(base)
    task = waiting(base, task_id)
    assert task["WaitingFor"]["Kind"] == "step" and task["WaitingFor"]["Key"] == "ask: 2 more approvals by operator"
    assert [a["Name"] for a in task["Steps"][1]["Shown"]["Actions"]] == ["approve", "reject"]
    assert task["SubmittedBy"] == "alice"
    shown = baton(cluster, "get", task_id)
    assert "waiting for step ask: 2 more approvals by operator" in shown.stdout, shown.stdout

    status, refused = act(base, task_id, "alice")
    assert status == 403 and "submitted the task" in refused["error"]["message"]
    status, refused = act(base, task_id, "dave")
    assert status == 403 and "dave has the read role" in refused["error"]["message"]
    status, refused = act(base, task_id, "erin")  # a submit token: the step names operators only
    assert status == 403 and "role operator" in refused["error"]["message"]
    assert act(base, task_id, "bob")[0] == 200
    status, again = act(base, task_id, "bob")
    assert status == 409 and "decided already" in again["error"]["message"]

    cli = baton(cluster, "approve", task_id, "ask", "--reason", "carol saw the ticket", "--as", "carol")
    assert cli.returncode == 0, cli.stderr
    final = wait_task_final(base, task_id, token=TOKEN["dave"])
    assert final["TaskStatusName"] == "SUCCESS"
    decisions = [(d["Actor"], d["Decision"], d["Reason"]) for d in final["Steps"][1]["Decisions"]]
    assert decisions == [("bob", "approve", "bob checked the backup"), ("carol", "approve", "carol saw the ticket")]
    audited = [(e["Event"], e["Actor"]) for e in final["History"] if e["Event"].startswith("approval")]
    assert audited == [("approval_requested", "oss"), ("approval_given", "bob"), ("approval_given", "carol")]

    def told(event: str) -> set[tuple[str, str]]:
        return {(d.body["Step"], d.body["Actor"]) for d in receiver.deliveries
                if d.body["TaskId"] == task_id and d.body["Event"] == event}

    wait_until(lambda: len(told("approval_given")) == 2 and told("approval_requested"), 30, "the webhooks")
    assert told("approval_given") == {("ask", "bob"), ("ask", "carol")}
    assert told("approval_requested") == {("ask", "oss")}
    assert all(d.signature_ok for d in receiver.deliveries)


def test_a_rejection_through_the_cli_rolls_the_task_back(deployment):
    cluster, base, _, receiver = deployment
    task_id = submit(base)
    waiting(base, task_id)
    cli = baton(cluster, "act", task_id, "ask", "reject", "--reason", "not during the sale", "--as", "erin")
    assert cli.returncode == 0, cli.stderr
    final = wait_task_final(base, task_id, token=TOKEN["dave"])
    assert final["TaskStatusName"] == "ROLLED_BACK" and "rejected by erin: not during the sale" in final["TaskMessage"]
    assert [s["State"] for s in final["Steps"]] == ["rolled_back", "skipped", "waiting"]
    late = baton(cluster, "approve", task_id, "ask", "--reason", "too late", "--as", "bob")
    assert late.returncode == 4 and "waits for no approve" in late.stderr, late.stderr
    wait_until(lambda: any(d.body["TaskId"] == task_id and d.body["Event"] == "approval_refused"
                           for d in receiver.deliveries), 30, "the refusal's webhook")


def test_the_timeout_rejects_when_nobody_decides(deployment):
    _, base, _, _ = deployment
    task_id = submit(base, "quick_ask")
    final = wait_task_final(base, task_id, token=TOKEN["dave"])
    assert final["TaskStatusName"] == "ROLLED_BACK" and "no decision within 2s: rejected" in final["TaskMessage"]


def test_approvers_racing_on_two_oss_processes_are_each_counted_once(deployment):
    _, base, second, _ = deployment
    for _ in range(5):
        task_id = submit(base)
        waiting(base, task_id)
        answers: dict[tuple[str, str], int] = {}
        racers = [threading.Thread(target=lambda who=who, where=where: answers.__setitem__(
            (who, where), act(where, task_id, who)[0])) for who in ("bob", "carol") for where in (base, second)]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join()
        # Each person is counted once: one of their two requests is taken, the other refused
        # (decided already, or the step no longer waits once both were counted).
        for who in ("bob", "carol"):
            assert sorted(answers[(who, where)] for where in (base, second)) == [200, 409], answers
        final = wait_task_final(base, task_id, token=TOKEN["dave"])
        assert final["TaskStatusName"] == "SUCCESS"
        assert sorted(d["Actor"] for d in final["Steps"][1]["Decisions"]) == ["bob", "carol"]
