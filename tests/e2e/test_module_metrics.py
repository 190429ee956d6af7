"""A module's Prometheus /metrics, scraped before and after tasks run through it."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from common.engine.states import TaskStatus
from tests.e2e.conftest import ENGINE_FLOWS
from tests.support.cluster import STATE_DEADLINE, Cluster
from tests.support.ports import free_port

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
# The counts below are exact: only the injected failure fails (the engine tests' steps run
# under a timeout no loaded machine reaches).
FLOWS = ENGINE_FLOWS


def scrape(port: int) -> dict[tuple, float]:
    """{(sample name, sorted label pairs): value} from a live /metrics page."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=STATE_DEADLINE).read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_module_metrics_move_after_tasks(rabbitmq_url, tmp_path):
    cluster = Cluster(tmp_path, rabbitmq_url, FLOWS)
    port = free_port()
    try:
        with cluster.starting():  # side by side
            cluster.start_module("resource", registry="tests.support.standin_commands:resource", BATON_METRICS_PORT=str(port))
            cluster.start_module("mysql", registry="tests.support.standin_commands:mysql")
            cluster.start_module("monitor")
        before = scrape(port)
        ok = cluster.submit("create_mysql_instance")
        failing = cluster.submit("create_mysql_instance", _baton_faults=[{"command": "deduct_resource", "action": "fail"}])
        assert cluster.wait_final(ok.TaskId).TaskStatus is TaskStatus.SUCCESS
        assert cluster.wait_final(failing.TaskId).TaskStatus is TaskStatus.ROLLED_BACK
        after = scrape(port)
    finally:
        cluster.stop_all()

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    step = dict(module="resource", phase="normal")
    assert grew("baton_step_duration_seconds_count", command="check_resource", outcome="ok", **step) == 2
    # deduct_resource failed on its first try and its one retry
    assert grew("baton_step_duration_seconds_count", command="deduct_resource", outcome="failed", **step) == 2
    assert grew("baton_step_retries_total", command="deduct_resource", **step) == 1
    # resource ran the last step of the successful task: it is the module that finished it
    assert grew("baton_tasks_finished_total", task_type="create_mysql_instance", status="SUCCESS") == 1
    assert grew("baton_outbox_publish_lag_seconds_count") >= 3
