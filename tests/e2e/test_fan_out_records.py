"""A for_each over item records (docs/design/item-records.md) on real module processes, the real
RabbitMQ and the SQLite store, with commands whose side effects are counted
(tests/support/ledger_commands.py).

- One item fails for good: every item that was applied is rolled back exactly once, none that
  never ran is, and in the documented order: the items after every dependent step settled, the
  step before them only once every item's rollback ended.
- The module is killed with SIGKILL in the middle of the fan-out and another process takes over:
  the sweeper heals what the dead one held, and every item's effect is made exactly once and
  committed once.
"""

from __future__ import annotations

from collections import Counter

import pytest

from common.engine.kinds.for_each.records import keeps_records
from common.engine.states import StepState, TaskStatus
from tests.support.cluster import wait_until
from tests.support.graph_checks import rollback_violations
from tests.support.ledger_cluster import REGISTRY, ledger_cluster
from tests.support.ledger_file import read_ledger

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
ITEMS = 300
CHAINS = 8

FLOWS = f"""
version: 1
defaults:
  timeout: 30
  retry: 2
  backoff: {{initial: 0.1, max: 0.2, multiplier: 2, jitter: 0.1}}
task_types:
  fleet:
    parameters:
      nodes: {{type: array, required: true}}
      work_seconds: {{type: number, default: 0}}
    steps:
      - name: prepare
        normal:   {{module: ledger, command: apply}}
        rollback: {{module: ledger, command: undo}}
      - name: each
        for_each: nodes
        max_parallel: {CHAINS}
        normal:   {{module: ledger, command: apply}}
        rollback: {{module: ledger, command: undo}}
      - name: finish
        normal:   {{module: ledger, command: apply}}
        rollback: {{module: ledger, command: undo}}
"""


@pytest.fixture
def cluster(rabbitmq_url, tmp_path):
    with ledger_cluster(tmp_path, rabbitmq_url, FLOWS, records=True) as cluster:
        yield cluster


def notes(cluster, task_id: str, op: str, cursor: int) -> list[dict]:
    return [n for n in read_ledger(cluster.ledger) if n["task"] == task_id and n["op"] == op and n["cursor"] == cursor]


def test_one_item_failing_for_good_rolls_back_exactly_the_applied_items_in_order(cluster):
    cluster.start_module("ledger", registry=REGISTRY)
    failing = 200
    faults = [{"command": "apply", "item": failing, "action": "fail", "retryable": False}]
    task = cluster.submit("fleet", nodes=[f"n{i}" for i in range(ITEMS)], _baton_faults=faults)
    task = cluster.wait_final(task.TaskId, timeout=300)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK, cluster.logs()
    stored = cluster.store.get(task.TaskId)
    assert keeps_records(stored.Steps[1]) and stored.Steps[1].Items is None  # not inline: in records
    assert f"step 1 (each) item {failing} failed" in task.TaskMessage
    items = task.Steps[1].Items
    assert len(items) == ITEMS

    applied = {n["item"] for n in notes(cluster, task.TaskId, "apply", 1)}
    undone = Counter(n["item"] for n in notes(cluster, task.TaskId, "undo", 1))
    # Every item that ran (the failed one too: it may have left debris) is undone, once each;
    # no item that never ran is.
    left = sorted((applied | {failing}) - set(undone))[:3]
    assert failing not in applied and not left, [(i, items[i].State, [(e.Event, e.Phase.label, e.Actor) for e in
                                                                     task.History if (e.Cursor, e.Item) == (1, i)])
                                                 for i in left]
    assert applied | {failing} == set(undone)
    assert set(undone.values()) == {1}
    assert {i for i, item in enumerate(items) if item.State is StepState.ROLLED_BACK} == set(undone)
    assert all(item.State in (StepState.WAITING, StepState.CANCELLED)
               for i, item in enumerate(items) if i not in undone)
    assert len(undone) < ITEMS  # the items after the failure's chains never started
    # The order: nothing of `finish` ran; `prepare` is undone once, after every item's undo.
    assert notes(cluster, task.TaskId, "apply", 2) == []
    (prepare_undo,) = notes(cluster, task.TaskId, "undo", 0)
    assert prepare_undo["time"] > max(n["time"] for n in notes(cluster, task.TaskId, "undo", 1))
    assert rollback_violations(task) == []


def test_a_module_killed_mid_fan_out_is_healed_and_every_item_runs_once(cluster):
    cluster.start_module("ledger", name="first", registry=REGISTRY)
    task = cluster.submit("fleet", nodes=[f"n{i}" for i in range(ITEMS)], work_seconds=0.02)
    wait_until(lambda: len(notes(cluster, task.TaskId, "apply", 1)) >= ITEMS // 4, 120, "a quarter of the items")
    cluster.kill("first")  # SIGKILL: its claimed runs lapse, its unacked deliveries go back
    assert cluster.store.get(task.TaskId).TaskStatus is TaskStatus.RUNNING  # killed mid-fan-out
    cluster.start_module("ledger", name="second", registry=REGISTRY)

    task = cluster.wait_final(task.TaskId, timeout=300)
    assert task.TaskStatus is TaskStatus.SUCCESS, cluster.logs()
    assert task.Parameters["each"] == [{"applied": i} for i in range(ITEMS)]
    # Each item's effect once (kept by its idempotency key, as a real module keeps it) ...
    effects = [p.name for p in cluster.effects.iterdir() if p.name.startswith(f"apply-{task.TaskId}_1.")]
    assert len(effects) == ITEMS
    ran = Counter(n["item"] for n in notes(cluster, task.TaskId, "apply", 1))
    assert set(ran) == set(range(ITEMS))
    assert sum(ran.values()) - ITEMS <= CHAINS  # only what the dead process held ran twice
    # ... and committed once: one success per item, both processes did some of the work.
    succeeded = Counter(e.Item for e in task.History if e.Event == "step_succeeded" and e.Cursor == 1)
    assert succeeded == Counter(range(ITEMS))
    assert all(item.State is StepState.SUCCEEDED for item in task.Steps[1].Items)
    assert len({n["pid"] for n in notes(cluster, task.TaskId, "apply", 1)}) >= 2
