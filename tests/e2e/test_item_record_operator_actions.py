"""Operator actions on a for_each step whose items are kept in records of their own
(docs/design/operator-actions.md and docs/design/item-records.md), end to end: a real module process
serving async commands (tests/support/kind_commands.py) on the real RabbitMQ, a separate sweeper,
the `baton` CLI as its own process, each process serving its Prometheus /metrics.

- `baton cancel --stop-running` stops the items whose commands run now (their coroutines are
  cancelled, long before they would end), records who stopped them, and rolls each of them
  back; the items nobody claimed yet never run.
- A task the item relay ends (its last items settled) counts once in `baton_tasks_finished_total`
  across every process that could have ended it: forward (SUCCESS) and after such a cancel
  (ROLLED_BACK).
"""

from __future__ import annotations

import json

import pytest

from common.engine.kinds.for_each import records as fan_out
from common.engine.kinds.for_each.records import keeps_records
from common.engine.states import StepState, TaskStatus
from common.store.items.open import open_item_store_for
from tests.e2e.test_freeze_windows import baton
from tests.e2e.test_module_metrics import scrape
from tests.support.cluster import Cluster, wait_until
from tests.support.ports import free_port

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

FLOWS = """
version: 1
defaults: {timeout: 3600, retry: 0}
task_types:
  fleet_wait:
    parameters:
      nodes: {type: array, required: true}
      seconds: {type: number, default: 0.1}
      marks: {type: string, default: ""}
      undo_gate: {type: string, default: ""}
    steps:
      - name: each
        for_each: nodes
        max_parallel: 2
        normal:   {module: kinds, command: wait}
        rollback: {module: kinds, command: undo}
  fleet_quick:
    parameters:
      nodes: {type: array, required: true}
    steps:
      - name: each
        for_each: nodes
        max_parallel: 3
        normal:   {module: kinds, command: wait}
        rollback: {module: kinds, command: undo}
"""


@pytest.fixture(scope="module")
def cluster(rabbitmq_url, tmp_path_factory):
    kept, fan_out.RECORDS_ENABLED = fan_out.RECORDS_ENABLED, True  # this process (the service's own changes) too
    cluster = Cluster(tmp_path_factory.mktemp("items-ops"), rabbitmq_url, FLOWS,
                      extra_env={"BATON_ITEM_RECORDS": "true"})
    cluster.ports = {"kinds": free_port(), "sweeper": free_port()}
    try:
        with cluster.starting():
            cluster.start_module("kinds", registry="tests.support.kind_commands:kinds",
                                 BATON_METRICS_PORT=str(cluster.ports["kinds"]))
            cluster.start_sweeper(BATON_METRICS_PORT=str(cluster.ports["sweeper"]))
        yield cluster
    finally:
        cluster.stop_all()
        fan_out.RECORDS_ENABLED = kept


def finished(cluster: Cluster, task_type: str, status: str) -> float:
    """baton_tasks_finished_total for the type and status, summed over the module and the sweeper."""
    key = ("baton_tasks_finished_total", (("status", status), ("task_type", task_type)))
    return sum(scrape(port).get(key, 0.0) for port in cluster.ports.values())


def records(cluster: Cluster, task_id: str) -> list:
    task = cluster.store.get(task_id)
    items = open_item_store_for(cluster.store)
    try:
        return items.page_items(task_id, task.Generation, 0, limit=100)
    finally:
        items.close()


def test_cancel_with_stop_running_stops_the_running_items_and_rolls_them_back(cluster, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    # The items' rollbacks wait for the gate, opened once the CLI has exited: else, on a loaded
    # machine, they could end before the CLI's relay looked whether the step settled, and the CLI
    # (whose metrics nobody scrapes) would be the process that ended the task.
    gate = marks / "undo.go"
    task = cluster.submit("fleet_wait", nodes=["a", "b", "c", "d"], seconds=3600, marks=str(marks),
                          undo_gate=str(gate))
    assert keeps_records(cluster.store.get(task.TaskId).Steps[0])
    started = [marks / f"{task.TaskId}-1-i{item}.started" for item in (0, 1)]
    wait_until(lambda: all(p.exists() for p in started), 60, "both chains' first items running")

    cancelled = baton(cluster, "cancel", task.TaskId, "--stop-running", "--reason", "wrong fleet", "--as", "ops:olga",
                      "--json")
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["CancelRequested"]["Actor"] == "ops:olga"
    gate.touch()
    # Ended by the stop, not by the commands: each would wait out its hour.
    done = cluster.wait_final(task.TaskId, timeout=60)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK, cluster.logs()
    for item in (0, 1):
        wait_until(lambda i=item: (marks / f"{task.TaskId}-1-i{i}.cancelled").exists(), 30,
                   f"item {item}'s coroutine cancelled")
    stopped = [e for e in done.History if e.Event == "stopped"]
    assert sorted(e.Item for e in stopped) == [0, 1]
    assert {(e.Actor, e.Message) for e in stopped} == {("ops:olga", "wrong fleet")}
    states = [r.State for r in records(cluster, task.TaskId)]
    assert states == [StepState.ROLLED_BACK, StepState.ROLLED_BACK, StepState.WAITING, StepState.WAITING]  # never started
    assert not list(marks.glob(f"{task.TaskId}-*-i2.*")) and not list(marks.glob(f"{task.TaskId}-*-i3.*"))
    lost = [e for e in cluster.log_events("kinds") if e.get("event") == "lease lost" and e.get("task_id") == task.TaskId]
    assert len(lost) == 2  # each stopped item's renewal refused: its coroutine cancelled
    # The item relay ended the task: counted once, by whichever process settled the last item.
    wait_until(lambda: finished(cluster, "fleet_wait", "ROLLED_BACK") >= 1, 10, "the finished task counted")
    assert finished(cluster, "fleet_wait", "ROLLED_BACK") == 1


def test_a_task_the_item_relay_ends_counts_once_as_finished(cluster):
    before = finished(cluster, "fleet_quick", "SUCCESS")
    tasks = [cluster.submit("fleet_quick", nodes=[f"n{i}" for i in range(6)]) for _ in range(3)]
    for task in tasks:
        assert cluster.wait_final(task.TaskId, timeout=60).TaskStatus is TaskStatus.SUCCESS, cluster.logs()
    wait_until(lambda: finished(cluster, "fleet_quick", "SUCCESS") - before >= 3, 10, "the finished tasks counted")
    assert finished(cluster, "fleet_quick", "SUCCESS") - before == 3
