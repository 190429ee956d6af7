"""A secret parameter through real processes: OSS (uvicorn, its sweeper), a module whose commands
leak on purpose (tests/support/leaky_vault.py), the real monitor with a webhook to a real HTTP
server, the real RabbitMQ. The step fails quoting the secret, its rollback fails quoting it (an
alarm, a webhook), an operator's reason quotes it. Then every process's log, every webhook body
(the alarm's and every task status notification's)
every API answer and the CLI's output is searched for it: zero hits."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.test_modules import HookServer
from tests.support.cluster import REPO, STATE_DEADLINE, Cluster, wait_until
from tests.support.ports import free_port
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
SECRET = "Sup3r-Secret-Pa55word"
TOKEN = "leak-test-operator-token-0123"
FLOWS = """
version: 1
defaults: {timeout: 10, retry: 0}
task_types:
  open_vault:
    parameters:
      name: {type: string, required: true}
      admin_password: {type: string, secret: true, min_length: 12}
    steps:
      - name: connect
        normal:   {module: vault, command: connect}
        rollback: {module: vault, command: disconnect}
"""


@pytest.fixture
def leaky(rabbitmq_url: str, tmp_path: Any) -> Iterator[tuple[Cluster, HookServer, str]]:
    hook = HookServer()
    task_hooks = WebhookReceiver("task-webhook-signing-key")  # the task status webhooks (OSS's sweeper)
    task_hooks.start()
    port = free_port()
    env = {"BATON_MONITOR_WEBHOOK_URL": hook.url,
           "BATON_WEBHOOK_URL": task_hooks.url, "BATON_WEBHOOK_SECRET": task_hooks.secret,
           "BATON_API_TOKENS": f"olga:{TOKEN}:operator", "BATON_LOG_LEVEL": "debug"}  # fmt: skip
    cluster = Cluster(tmp_path, rabbitmq_url, FLOWS, extra_env=env)
    try:
        with cluster.starting():  # side by side
            cluster.start_module("vault", registry="tests.support.leaky_vault:vault")
            cluster.start_module("monitor")
        cluster.start_process("oss", [sys.executable, "-m", "oss", "oss", "--port", str(port)], {}, ready="Uvicorn running")
        cluster.task_hooks = task_hooks  # type: ignore[attr-defined]
        yield cluster, hook, f"http://127.0.0.1:{port}"
    finally:
        cluster.stop_all()
        hook.close()
        task_hooks.stop()


def test_a_secret_reaches_no_log_webhook_alarm_or_answer(leaky):
    cluster, hook, base = leaky
    answers: list[str] = []
    client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=STATE_DEADLINE)

    def call(method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = client.request(method, path, **kwargs)
        answers.append(f"{response.status_code} {response.headers} {response.text}")
        return response

    created = call("POST", "/api/v1/tasks", json={"task_type": "open_vault",
                   "parameters": {"name": "vault1", "admin_password": SECRET}})  # fmt: skip
    assert created.status_code == 201, created.text
    task_id = created.json()["task_id"]
    wait_until(lambda: call("GET", f"/api/v1/tasks/{task_id}").json()["TaskStatus"] == 5, 60, "rollback failed")
    wait_until(lambda: any(b["alarm"]["TaskId"] == task_id for b in hook.bodies), 30, "alarm webhook")

    acted = call("POST", f"/api/v1/tasks/{task_id}/compensate",
                 json={"reason": f"dropped by hand; the old password was {SECRET}"})  # fmt: skip
    assert acted.status_code == 200, acted.text
    wait_until(lambda: call("GET", f"/api/v1/tasks/{task_id}").json()["TaskStatus"] == 4, 30, "rolled back")
    for path in ("/api/v1/tasks", "/api/v1/alarms", "/metrics", f"/api/v1/tasks/{task_id}"):
        assert call("GET", path).status_code == 200
    # Free text is stored scrubbed too: only Parameters keep the value, for the commands.
    stored = cluster.store.get(task_id).model_dump(mode="json")
    assert "access denied for admin using ***" in stored["Steps"][0]["Message"]
    assert SECRET not in str({k: v for k, v in stored.items() if k not in ("Parameters", "SubmittedParameters")})

    events = ["created", "started", "rolling_back", "rollback_failed", "rolled_back"]
    received = cluster.task_hooks.received
    wait_until(lambda: {d.body["Event"] for d in received() if d.body["TaskId"] == task_id} >= set(events),
               30, "every status webhook")
    assert all(d.signature_ok and d.body["Parameters"]["admin_password"] == "***" for d in received())

    logs = {name: proc.log_text() for name, proc in cluster.procs.items()}
    # Every path was taken: the command logged, the monitor alarmed, OSS logged the action.
    assert "connecting" in logs["vault"] and "access denied" in logs["vault"]
    assert "ALARM" in logs["monitor"] and "operator action" in logs["oss"]
    cli = [subprocess.run([sys.executable, "-m", "oss", *args], cwd=REPO, env=cluster.env, capture_output=True,
                          text=True, timeout=STATE_DEADLINE) for args in (["get", task_id], ["get", task_id, "--json"],
                                                               ["list", "--json"])]  # fmt: skip
    assert all(run.returncode == 0 for run in cli), [run.stderr for run in cli]
    outputs = {**logs, "webhook": repr(hook.bodies), "api": "\n".join(answers),
               "task webhooks": "\n".join(d.raw.decode() + repr(d.headers) for d in received()),
               "cli": "\n".join(run.stdout + run.stderr for run in cli)}  # fmt: skip
    leaks = {name: text.count(SECRET) for name, text in outputs.items() if SECRET in text}
    assert leaks == {}, f"the secret leaked: {leaks}"
