"""Freeze windows end to end, with real processes on the real RabbitMQ (SQLite store, or MongoDB
on SecantusDB with BATON_TEST_STORE=mongo): OSS serving REST, `baton` CLI invocations, a module
and a separate sweeper.

- A refusing window: REST answers 409 `frozen` naming the window and its end, a dry run the
  same, and nothing is created; `baton submit` prints the same and exits 4.
- A waiting window: the task is created and waits (`WaitingFor` kind freeze, shown by the REST
  task view, the event stream and `baton get`), and starts nothing; cancelled, it ends without
  running a step.
- A window that ends in seconds: the sweeper (its own process) lets the task go at the window's
  end, and it runs to success; its history says it waited and when the window ended.
- A broken freeze block stops OSS at start, naming the file, the line and the path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from common.engine.states import TaskStatus
from common.flows import load_flows
from common.settings import load_settings
from oss.services.tasks import TaskService
from tests.deploy.support import http
from tests.support.cluster import REPO, STATE_DEADLINE
from tests.support.oss_deployment import baton, oss_deployment, stream_events
from tests.support.ports import free_port
from tests.support.test_store import cluster_mongo_url

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

TYPES = """
version: 1
defaults: {timeout: 10, retry: 0}
task_types:
  guarded:
    steps:
      - name: a
        normal: {module: resource, command: step_a}
  held:
    steps:
      - name: a
        normal: {module: resource, command: step_a}
  soon:
    steps:
      - name: a
        normal:   {module: resource, command: step_a}
        rollback: {module: resource, command: undo_a}
      - name: c
        normal:   {module: resource, command: step_c}
"""
# Daily windows a day long (UTC): one opens as the last closes, open whenever the test runs.
ALWAYS_OPEN = """
freeze:
  - {name: change_freeze, cron: "0 0 * * *", duration: 24h, task_types: [guarded], policy: refuse}
  - {name: maintenance, cron: "0 0 * * *", duration: 24h, task_types: [held], policy: wait}
"""


@pytest.fixture(scope="module")
def deployment(rabbitmq_url, tmp_path_factory, request):
    with oss_deployment(tmp_path_factory.mktemp("freeze"), rabbitmq_url, TYPES + ALWAYS_OPEN,
                        {"resource": "tests.support.standin_commands:resource"},
                        mongo_url=cluster_mongo_url(request)) as deployed:  # fmt: skip
        yield deployed


def test_a_refusing_window_refuses_over_rest_and_the_cli_and_creates_nothing(deployment):
    cluster, base = deployment
    status, body = http("POST", f"{base}/api/v1/tasks", {"task_type": "guarded", "parameters": {}})
    assert status == 409, body
    assert body["error"]["code"] == "frozen"
    assert body["error"]["message"].startswith("task type guarded is frozen: freeze window change_freeze "
                                               "refuses new tasks until 20")  # fmt: skip
    assert body["error"]["fields"] == [{"path": "task_type", "message": "frozen by window change_freeze"}]
    status, planned = http("POST", f"{base}/api/v1/tasks", {"task_type": "guarded", "parameters": {}, "dry_run": True})
    assert (status, planned["error"]["code"]) == (409, "frozen")

    refused = baton(cluster, "submit", "guarded")
    assert refused.returncode == 4, refused.stderr
    assert "freeze window change_freeze refuses new tasks until" in refused.stderr
    assert "nothing was created" in refused.stderr
    listed = http("GET", f"{base}/api/v1/tasks?task_type=guarded")[1]["items"]
    assert listed == []


def test_a_waiting_window_holds_the_task_and_every_view_says_so(deployment):
    cluster, base = deployment
    status, created = http("POST", f"{base}/api/v1/tasks", {"task_type": "held", "parameters": {}})
    assert status == 201, created
    task_id = created["task_id"]
    time.sleep(1.0)  # the sweeper sweeps every 0.3 s: the task would have started by now
    status, task = http("GET", f"{base}/api/v1/tasks/{task_id}")
    assert task["TaskStatus"] == int(TaskStatus.NOT_STARTED) and task["Steps"][0]["State"] == "waiting"
    wait = task["WaitingFor"]
    assert (wait["Kind"], wait["Key"]) == ("freeze", "maintenance") and wait["Until"] > time.time()

    changes = [data["Event"] for kind, data in stream_events(base, task_id) if kind == "change"]
    assert changes == ["created", "waiting_for_freeze"]

    shown = baton(cluster, "get", task_id)
    assert shown.returncode == 0, shown.stderr
    assert "waiting for freeze maintenance until 20" in shown.stdout

    planned = http("POST", f"{base}/api/v1/tasks", {"task_type": "held", "parameters": {}, "dry_run": True})[1]
    assert planned["start"]["when"] == "freeze"
    assert planned["start"]["reasons"][0].startswith("once freeze window maintenance ends at 20")

    status, _ = http("POST", f"{base}/api/v1/tasks/{task_id}/cancel", {"reason": "not this week"})
    assert status == 200
    ended = cluster.wait_final(task_id)
    assert ended.TaskStatus is TaskStatus.ROLLED_BACK and ended.Steps[0].Attempts == 0
    assert "claimed" not in [e.Event for e in ended.History]


def test_a_task_waits_for_a_window_ending_in_seconds_then_the_sweeper_lets_it_run(deployment):
    cluster, _ = deployment
    # A window that opens hourly at this very minute, opened at its start: it ends in 5 to 6 s,
    # and never reaches its next opening, an hour on (whatever the clock says now).
    now = time.time()
    opened, duration = now - now % 60, int(now % 60) + 6
    ends = opened + duration
    minute = time.gmtime(opened).tm_min
    window = f'\nfreeze:\n  - {{name: short, cron: "{minute} * * * *", duration: {duration}, task_types: [soon], policy: wait}}\n'
    # Submitted in this process (a CLI process could take longer than the window has left on a
    # busy machine), by a service that reads the window; the sweeper's flows do not have it: the
    # task's stored WaitingFor is what it goes by.
    flows_path = cluster.workdir / "flows-short-window.yaml"
    flows_path.write_text(TYPES + window)
    settings = load_settings(broker_url=cluster.broker_url, store_url=cluster.store_url, flows_path=str(flows_path))
    service = TaskService(cluster.store, cluster.broker, load_flows(flows_path), settings)
    try:
        task_id = service.submit("soon", {}).task.TaskId
    finally:
        service.close()
    waiting = cluster.store.get(task_id)
    assert waiting.WaitingFor is not None and waiting.WaitingFor.Kind == "freeze"
    assert waiting.WaitingFor.Until == pytest.approx(ends, abs=1e-6) and waiting.Runs == []

    done = cluster.wait_final(task_id, timeout=90)
    assert done.TaskStatus is TaskStatus.SUCCESS, done.TaskMessage
    events = [e.Event for e in done.History]
    assert events[:3] == ["created", "waiting_for_freeze", "freeze_ended"]
    released = next(e for e in done.History if e.Event == "freeze_ended")
    assert released.Time >= ends and released.Actor == "oss"
    assert done.TimeStart is not None and done.TimeStart >= ends


def test_oss_does_not_start_on_a_broken_freeze_block_and_names_file_line_and_path(tmp_path, rabbitmq_url):
    flows = tmp_path / "flows.yaml"
    flows.write_text(TYPES + """
freeze:
  - {name: weekend, cron: "0 18 * * 5", duration: 64 hours, task_types: [held, helt], policy: wait}
  - {name: nightly, cron: "0 * * * *", duration: 2h, task_types: [held], policy: wait}
""")
    env = {**os.environ, "PYTHONPATH": str(REPO), "BATON_BROKER_URL": rabbitmq_url, "BATON_FLOWS_PATH": str(flows),
           "BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}"}  # fmt: skip
    started = subprocess.run([sys.executable, "-m", "oss", "oss", "--port", str(free_port())], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=STATE_DEADLINE)  # fmt: skip
    assert started.returncode != 0
    out = started.stdout + started.stderr
    line = len(TYPES.splitlines()) + 3
    assert f"{flows}:{line}: freeze[0].duration: must be seconds" in out, out[-3000:]
    assert f"{flows}:{line}: freeze[0].task_types[1]: names unknown task type \"helt\"" in out, out[-3000:]
    # A window longer than the hour between its openings would never close.
    assert f"{flows}:{line + 1}: freeze[1].duration: lasts 2h, longer than the 1h between two openings" in out, out[-3000:]
