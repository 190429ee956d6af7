"""What a reader is shown of steps that keep their items in records (docs/fan-out.md), through real
processes: a module and the sweeper on the real RabbitMQ, the API served by `baton oss`, and
`baton get` run as a command.

A task runs a fan-out without a rollback, then one whose item fails after its retries; the task
rolls back. Each step over records shows the sums of its items' attempts and rollback attempts
as its own (as a step keeping its items inline does), and the step passed over backward (it
declares no rollback) shows its items `skipped`, in its counts and on its items pages, as an
inline step's items read.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from common.engine.kinds.for_each import records as fan_out
from common.engine.states import TaskStatus
from tests.deploy.support import TOKENS, http
from tests.support.cluster import REPO, STATE_DEADLINE, Cluster, wait_until
from tests.support.oss_deployment import answers
from tests.support.ports import free_port

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
REGISTRY = "tests.support.ledger_commands:ledger"
NODES, ZONES, FAILING = 24, 6, 17

FLOWS = """
version: 1
defaults:
  timeout: 30
  retry: 2
  backoff: {initial: 0.05, max: 0.1, multiplier: 2, jitter: 0.1}
task_types:
  fleet:
    parameters:
      nodes: {type: array, required: true}
      zones: {type: array, required: true}
    steps:
      - name: prepare
        normal:   {module: ledger, command: apply}
        rollback: {module: ledger, command: undo}
      - name: announce
        for_each: zones
        max_parallel: 3
        normal:   {module: ledger, command: apply}
      - name: each
        for_each: nodes
        max_parallel: 4
        normal:   {module: ledger, command: apply}
        rollback: {module: ledger, command: undo}
"""


@pytest.fixture(scope="module")
def rolled_back(rabbitmq_url, tmp_path_factory):
    """A task rolled back by item FAILING of `each` (three attempts, all failing), and the API's base URL."""
    tmp_path = tmp_path_factory.mktemp("records-views")
    effects = tmp_path / "effects"
    effects.mkdir()
    before = fan_out.use_records(True)  # this process's own changes (the test's submit)
    env = {"BATON_TEST_LEDGER": str(tmp_path / "ledger.jsonl"), "BATON_TEST_EFFECTS": str(effects),
           "BATON_ITEM_RECORDS": "1", "BATON_API_TOKENS": TOKENS}
    cluster = Cluster(tmp_path, rabbitmq_url, FLOWS, extra_env=env)
    try:
        port = free_port()
        with cluster.starting():
            cluster.start_module("ledger", registry=REGISTRY)
            cluster.start_oss(port)
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: answers(f"{base}/readyz"), 30, "OSS ready")
        faults = [{"command": "apply", "item": FAILING, "action": "fail"}]
        task = cluster.submit("fleet", nodes=[f"n{i}" for i in range(NODES)], zones=[f"z{i}" for i in range(ZONES)],
                              _baton_faults=faults)
        task = cluster.wait_final(task.TaskId, timeout=300)
        assert task.TaskStatus is TaskStatus.ROLLED_BACK, cluster.logs()
        yield cluster, base, task.TaskId
    finally:
        cluster.stop_all()
        fan_out.use_records(before)


def every_item(base: str, task_id: str, step: str, **query: str) -> list[dict]:
    found: list[dict] = []
    after: dict = {}
    while True:
        params = "&".join(f"{k}={v}" for k, v in {**query, **after, "limit": 7}.items())
        status, body = http("GET", f"{base}/api/v1/tasks/{task_id}/steps/{step}/items?{params}")
        assert status == 200, body
        found += body["Items"]
        if body["NextAfter"] is None:
            return found
        after = {"after": body["NextAfter"]}


def test_a_records_step_shows_its_items_attempts_summed_in_the_api_and_baton_get(rolled_back):
    cluster, base, task_id = rolled_back
    status, shown = http("GET", f"{base}/api/v1/tasks/{task_id}")
    assert status == 200, shown
    each = shown["Steps"][2]
    assert each["ItemStore"] == "records" and each["State"] == "rolled_back"
    items = every_item(base, task_id, "each")
    assert items[FAILING]["Attempts"] == 3  # its retries: the step's sum counts them all
    attempts, rollbacks = sum(i["Attempts"] for i in items), sum(i["RollbackAttempts"] for i in items)
    assert rollbacks >= 1 and attempts >= 3
    assert (each["Attempts"], each["RollbackAttempts"]) == (attempts, rollbacks)
    stored = cluster.store.get(task_id).Steps[2]  # kept as the step's own when its items settled
    assert (stored.Attempts, stored.RollbackAttempts) == (attempts, rollbacks)
    announce = shown["Steps"][1]
    assert announce["Attempts"] == ZONES and announce["RollbackAttempts"] == 0

    got = subprocess.run([sys.executable, "-m", "oss", "get", task_id], env=cluster.env, cwd=REPO,
                         capture_output=True, text=True, timeout=STATE_DEADLINE)
    assert got.returncode == 0, got.stderr
    line = next(line for line in got.stdout.splitlines() if line.startswith("  [2] each"))
    assert f"attempts {attempts} " in line, got.stdout
    as_json = subprocess.run([sys.executable, "-m", "oss", "get", task_id, "--json"], env=cluster.env, cwd=REPO,
                             capture_output=True, text=True, timeout=STATE_DEADLINE)
    step = json.loads(as_json.stdout)["Steps"][2]
    assert (step["Attempts"], step["RollbackAttempts"]) == (attempts, rollbacks)


def test_the_items_of_a_step_passed_over_backward_read_skipped(rolled_back):
    cluster, base, task_id = rolled_back
    announce = http("GET", f"{base}/api/v1/tasks/{task_id}")[1]["Steps"][1]
    assert announce["State"] == "skipped" and announce["ItemStore"] == "records"
    assert announce["ItemCounts"] == {"skipped": ZONES}
    items = every_item(base, task_id, "announce")
    assert [i["State"] for i in items] == ["skipped"] * ZONES
    assert [i["Item"] for i in every_item(base, task_id, "announce", state="skipped")] == list(range(ZONES))
    assert every_item(base, task_id, "announce", state="succeeded") == []
    got = subprocess.run([sys.executable, "-m", "oss", "get", task_id], env=cluster.env, cwd=REPO,
                         capture_output=True, text=True, timeout=STATE_DEADLINE)
    assert f"items {ZONES}: {ZONES} skipped" in got.stdout, got.stdout
