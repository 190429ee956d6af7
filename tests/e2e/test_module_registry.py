"""Modules announce themselves, and a flow naming a module nobody runs is noticed, with real
processes on RabbitMQ: flows.yaml has a typo (`dnz`), OSS starts anyway (the module might start
later) but says so, the task's step waits in queue `dnz`, the task view says no live module
serves it, and within BATON_UNSERVED_ALARM_SECONDS the sweeper inside OSS raises one alarm,
stored by the (real) monitor and visible through the API. A module stopped cleanly withdraws."""

from __future__ import annotations

import signal

import pytest

from tests.deploy.support import TOKENS, http
from tests.support.ports import free_port
from tests.support.cluster import Cluster, wait_until
from tests.support.oss_deployment import answers

THRESHOLD = 3.0
FLOWS = """
version: 1
defaults: {timeout: 5, retry: 0}
task_types:
  with_a_typo:
    steps:
      - name: reserve
        normal:   {module: resource, command: check_resource}
        rollback: {module: resource, command: restore_resource}
      - name: announce
        normal:   {module: dnz, command: report_event}
"""


@pytest.fixture(scope="module")
def deployment(rabbitmq_url, tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("typo"), rabbitmq_url, FLOWS, extra_env={
        "BATON_MODULE_HEARTBEAT_SECONDS": "0.5", "BATON_UNSERVED_ALARM_SECONDS": str(THRESHOLD),
        "BATON_API_TOKENS": TOKENS,
    })  # fmt: skip
    port = free_port()
    try:
        with cluster.starting():  # side by side
            cluster.start_module("resource", registry="tests.support.standin_commands:resource")
            cluster.start_module("monitor")
        oss = cluster.start_oss(port)  # after them: it warns of the modules not running at its start
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: answers(f"{base}/readyz"), 30, "OSS ready")
        yield cluster, base, oss.log_path
    finally:
        cluster.stop_all()


def test_a_typo_in_a_module_name_raises_one_alarm_and_the_task_says_why(deployment):
    cluster, base, oss_log = deployment
    assert "flows.yaml names a module that is not running (yet)" in oss_log.read_text()
    assert "dnz" in oss_log.read_text()
    status, modules = http("GET", f"{base}/api/v1/modules")
    assert status == 200 and {m["module"] for m in modules["items"]} == {"resource", "monitor"}
    status, created = http("POST", f"{base}/api/v1/tasks", {"task_type": "with_a_typo", "parameters": {"cpu": 1}})
    assert status == 201, created
    task_id = created["task_id"]

    def alarm() -> dict | None:
        items = http("GET", f"{base}/api/v1/alarms")[1]["items"]
        return next((a for a in items if a["Kind"] == "no_live_module"), None)

    wait_until(lambda: alarm() is not None, THRESHOLD + 30, "the unserved-queue alarm")
    raised = alarm()
    assert raised["Module"] == "dnz" and raised["TaskId"] == task_id and raised["Cursor"] == 1
    assert "no live module serves queue dnz" in raised["Message"]
    task = http("GET", f"{base}/api/v1/tasks/{task_id}")[1]
    assert task["Waiting"] == "no live module serves queue dnz" and task["Steps"][0]["State"] == "succeeded"
    wait_until(lambda: "ALARM" in cluster.procs["monitor"].log_text(), 10, "the monitor's alarm line")
    items = http("GET", f"{base}/api/v1/alarms")[1]["items"]
    assert [a["Kind"] for a in items].count("no_live_module") == 1  # sweeps go on; one alarm


def test_a_module_stopped_cleanly_withdraws_its_announcement(deployment):
    cluster, base, _ = deployment
    cluster.kill("resource", signal.SIGTERM)
    live = {m["module"] for m in http("GET", f"{base}/api/v1/modules")[1]["items"]}
    assert live == {"monitor"}
    everything = http("GET", f"{base}/api/v1/modules?stale=true")[1]["items"]
    assert "resource" not in {m["module"] for m in everything}  # withdrawn, not merely stale
