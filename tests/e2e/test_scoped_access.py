"""Scoped tokens through real processes (docs/guide/access.md's worked example): OSS serving REST
with BATON_API_TOKENS in its JSON form, a mysql module and a sweeper of their own, and
`baton watch --api` as a process of its own with a scoped token.

- The scoped token lists and counts only its namespaces' tasks, reads and streams its own task
  to its end, and another team's task answers 404 on every surface, word for word as an id that
  names nothing; an action on it changes nothing. The secret canary never shows.
- `baton watch --api` with the scoped token: its own task followed to success; another team's
  refused exactly as a task that does not exist.
- A bad BATON_API_TOKENS stops OSS at start, naming entry, field and value, never a token.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

import pytest

from tests.deploy.support import http
from tests.support.cluster import REPO, STATE_DEADLINE
from tests.support.doc_examples import blocks
from tests.support.oss_deployment import baton, oss_deployment
from tests.support.ports import free_port
from tests.support.test_store import cluster_mongo_url

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

PAGE = "docs/guide/access.md"
(FLOWS,) = blocks(PAGE, "A worked example", "yaml")
TOKENS, _ = blocks(PAGE, "A worked example", "json")
OPS, PAYMENTS, DASHBOARDS = (entry["token"] for entry in json.loads(TOKENS))
SECRET = "canary-pw-0123456789!"


@pytest.fixture(scope="module")
def deployment(rabbitmq_url, tmp_path_factory, request):
    with oss_deployment(tmp_path_factory.mktemp("scopes"), rabbitmq_url, FLOWS,
                        {"mysql": "tests.support.standin_commands:mysql"}, mongo_url=cluster_mongo_url(request),
                        extra_env={"BATON_API_TOKENS": TOKENS}) as deployed:  # fmt: skip
        yield deployed


def created(base: str, token: str, body: dict) -> str:
    status, answer = http("POST", f"{base}/api/v1/tasks", body, token=token)
    assert status == 201, answer
    return str(answer["task_id"])


def raw_stream(base: str, task_id: str, token: str, seconds: float = 30) -> tuple[int, str]:
    request = urllib.request.Request(f"{base}/api/v1/tasks/{task_id}/events?timeout={seconds:g}",
                                     headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=seconds + 30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_scoped_token_sees_and_changes_only_its_namespaces(deployment):
    cluster, base = deployment
    db = {"task_type": "create_db", "parameters": {"name": "pay1", "admin_password": SECRET}}
    theirs = created(base, OPS, {**db, "parameters": {"name": "shop1", "admin_password": SECRET}, "labels": {"team": "shop"}})
    report = created(base, OPS, {"task_type": "report"})
    mine = created(base, PAYMENTS, {**db, "labels": {"team": "payments"}})

    status, page = http("GET", f"{base}/api/v1/tasks", token=PAYMENTS)
    assert status == 200 and [t["TaskId"] for t in page["items"]] == [mine]
    assert page["total"] == 1 and sum(page["counts"].values()) == 1
    assert http("GET", f"{base}/api/v1/tasks", token=OPS)[1]["total"] == 3

    stream_status, stream = raw_stream(base, mine, PAYMENTS)
    assert stream_status == 200 and "event: end" in stream and SECRET not in stream
    assert cluster.wait_final(mine).TaskStatus.name == "SUCCESS"

    nothing = {path: http(method, f"{base}{path.format('no-such-task')}", body, token=PAYMENTS)
               for method, path, body in SURFACES}  # fmt: skip
    for task_id in (theirs, report):
        for method, path, body in SURFACES:
            answer = http(method, f"{base}{path.format(task_id)}", body, token=PAYMENTS)
            assert answer == nothing[path], (path, answer)
            assert answer[0] == 404
        assert raw_stream(base, task_id, PAYMENTS, 1) == raw_stream(base, "no-such-task", PAYMENTS, 1)
        task = cluster.store.get(task_id)  # nothing changed by the token (the sweeper moves it on its own)
        assert not task.CancelRequested and not task.Paused and all(e.Actor != "payments" for e in task.History)

    dashboards = http("GET", f"{base}/api/v1/tasks", token=DASHBOARDS)[1]
    assert [t["TaskId"] for t in dashboards["items"]] == [report] and dashboards["total"] == 1
    for token in (PAYMENTS, DASHBOARDS, OPS):
        assert SECRET not in json.dumps(http("GET", f"{base}/api/v1/tasks", token=token)[1])

    # baton watch --api, a process of its own, with the scoped token
    env_cluster = cluster
    env_cluster.env["BATON_API_TOKEN"] = PAYMENTS
    try:
        followed = baton(env_cluster, "watch", mine, "--api", base)
        assert followed.returncode == 0, followed.stderr
        refused = baton(env_cluster, "watch", theirs, "--api", base)
        absent = baton(env_cluster, "watch", "no-such-task", "--api", base)
    finally:
        del env_cluster.env["BATON_API_TOKEN"]
    assert refused.returncode == absent.returncode != 0, refused.stderr
    assert refused.stderr.replace(theirs, "ID") == absent.stderr.replace("no-such-task", "ID"), refused.stderr


SURFACES = [
    ("GET", "/api/v1/tasks/{}", None),
    ("GET", "/api/v1/tasks/{}/steps/0/items", None),
    ("POST", "/api/v1/tasks/{}/cancel", {"reason": "not yours"}),
    ("POST", "/api/v1/tasks/{}/pause", {"reason": "not yours"}),
    ("POST", "/api/v1/tasks/{}/skip", {"reason": "not yours", "step": 0}),
]


@pytest.mark.parametrize(("value", "said"), [
    ('[{"name": "ops", "token": "ops-token-0123456789abcdef", "role": "admin"}]',
     "entry 1 (ops): role: must be read, submit or operator (got 'admin')"),
    ('[{"name": "payments", "token": "payments-token-0123456789", "namespaces": '
     '[{"name": "dbs", "task_types": ["create_bd"], "role": "operator"}]}]',
     "entry 1 (payments): namespaces[0].task_types: 'create_bd' is not a task type flows.yaml defines"),
])  # fmt: skip
def test_oss_does_not_start_on_a_bad_token_entry_and_names_it(tmp_path, value, said):
    flows = tmp_path / "flows.yaml"
    flows.write_text(FLOWS)
    # No broker or store is reached: the settings and flows.yaml are checked before anything opens.
    env = {**os.environ, "PYTHONPATH": str(REPO), "BATON_BROKER_URL": "amqp://guest:guest@127.0.0.1:5672/", "BATON_FLOWS_PATH": str(flows),
           "BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_API_TOKENS": value}  # fmt: skip
    started = subprocess.run([sys.executable, "-m", "oss", "oss", "--port", str(free_port())], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=STATE_DEADLINE)  # fmt: skip
    out = started.stdout + started.stderr
    assert started.returncode == 2, out[-3000:]
    assert "BATON_API_TOKENS" in out and said in out, out[-3000:]
    assert "0123456789" not in out  # no token, not even in part
    assert not (tmp_path / "baton.db").exists()  # stopped before the store was opened
