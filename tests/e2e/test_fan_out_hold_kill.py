"""Hold and redrive of a for_each over item records under a kill -9 loop (docs/design/item-records.md,
"Hold and redrive"): two module replicas serving commands whose side effects are kept once per
idempotency key and noted in a ledger (tests/support/ledger_commands.py), one of them killed with
SIGKILL every few seconds and started again, through the first run and through the redrive.

Checked from the side effects: every item's effect made exactly once across the first run and the
redrive (the tolerated ones never), no item that had succeeded before the redrive run again by
it, each item failed within the budget undone exactly once, and nothing else undone; the task
ends succeeded with exactly those items failed.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter

import pytest

from common.engine.states import StepState, TaskStatus
from common.store.items.open import open_item_store_for
from tests.support.cluster import wait_until
from tests.support.ledger_cluster import REGISTRY, ledger_cluster
from tests.support.ledger_file import read_ledger
from tests.support.oss_deployment import baton

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow, pytest.mark.timeout(900)]
ITEMS, CHAINS = 200, 8  # a hundred items after the hold: the redrive runs for seconds, under kills
KILLS_PER_PHASE, PERIOD = 3, 2.0  # each kill costs its items a lease and a redelivery: a few seconds
# All three in one chain (item % CHAINS == 4: its items run one after the other), so the third
# failure is HOLDING's however the kills slow the chains down (items of different chains fail in
# any order).
TOLERATED = (20, 52)  # fail their first attempt: within the budget of 2, rolled back on their own
HOLDING = 100  # fails its first attempt past the budget: the task holds; the redrive's attempt succeeds

FLOWS = f"""
version: 1
defaults:
  timeout: 30
  # A lease lost to a kill is a failed attempt: retried. An item caught by three kills in a row
  # would fail for good and spend the budget meant for the injected failures.
  retry: 5
  backoff: {{initial: 0.1, max: 0.2, multiplier: 2, jitter: 0.1}}
task_types:
  fleet:
    parameters:
      nodes: {{type: array, required: true}}
      work_seconds: {{type: number, default: 0}}
    steps:
      - name: each
        for_each: nodes
        max_parallel: {CHAINS}
        tolerate: {{count: {len(TOLERATED)}}}
        on_failure: hold
        normal:   {{module: ledger, command: apply}}
        rollback: {{module: ledger, command: undo}}
"""


@pytest.fixture
def cluster(rabbitmq_url, tmp_path):
    with ledger_cluster(tmp_path, rabbitmq_url, FLOWS, records=True) as cluster:
        yield cluster


def made(cluster, task_id: str, op: str) -> Counter:
    """Each item's effects of `op` (one file per idempotency key: made once, however often run)."""
    prefix = f"{op}-{task_id}_0."  # <op>-<task>:<step>.<item>:<phase>, ':' written '_'
    return Counter(int(p.name[len(prefix):].split("_")[0]) for p in cluster.effects.iterdir() if p.name.startswith(prefix))


def test_hold_and_redrive_under_kill_9_apply_each_item_exactly_once(cluster):
    replicas = ("first", "second")
    with cluster.starting():
        for name in replicas:
            cluster.start_module("ledger", name=name, registry=REGISTRY)
    faults = [{"command": "apply", "item": item, "action": "fail", "retryable": False, "times": 1}
              for item in (*TOLERATED, HOLDING)]
    task = cluster.submit("fleet", nodes=[f"n{i}" for i in range(ITEMS)], work_seconds=0.25, _baton_faults=faults)
    task_id, kills = task.TaskId, 0
    turns = itertools.cycle(replicas)

    def kill_one() -> None:
        nonlocal kills
        name = next(turns)
        cluster.kill(name)  # SIGKILL: its claims lapse, its unacked deliveries go back
        cluster.start_module("ledger", name=name, registry=REGISTRY)
        kills += 1

    def kill_while(going, phase_kills: int) -> None:
        """Kill a replica every PERIOD seconds while `going()`, at most `phase_kills` times."""
        for _ in range(phase_kills):
            if not going():
                return
            kill_one()
            time.sleep(PERIOD)

    kill_while(lambda: cluster.store.get(task_id).Held is None, KILLS_PER_PHASE)
    wait_until(lambda: cluster.store.get(task_id).Held is not None, 300, "the task held")
    held = cluster.store.get(task_id)
    assert held.TaskStatus is TaskStatus.RUNNING and held.Held.Item == HOLDING, held.TaskMessage
    # Let what runs finish (the hold starts nothing new): then read what succeeded before the redrive.
    items = open_item_store_for(cluster.store)
    try:
        def quiet() -> bool:
            return not [r for r in items.page_items(task_id, 0, 0, limit=ITEMS, states=[StepState.RUNNING])
                        if r.Run is not None and r.Run.State.value == "running"]

        wait_until(quiet, 120, "the running items finished")
        before = {r.Item for r in items.page_items(task_id, 0, 0, limit=ITEMS, states=[StepState.SUCCEEDED])}
    finally:
        items.close()
    assert not made(cluster, task_id, "undo").keys() - set(TOLERATED)  # nothing rolled back but the tolerated
    redriven_at = time.time()
    answer = baton(cluster, "redrive", task_id, "--reason", "the mirror is back")
    assert answer.returncode == 0, answer.stderr
    kill_one()  # at once, while the redriven items start: the redrive itself must survive a kill
    kill_while(lambda: cluster.store.get(task_id).TaskStatus is TaskStatus.RUNNING, KILLS_PER_PHASE - 1)
    task = cluster.wait_final(task_id, timeout=300)

    assert task.TaskStatus is TaskStatus.SUCCESS and task.FailedItems == len(TOLERATED), task.TaskMessage
    applied = made(cluster, task_id, "apply")
    assert applied == Counter(set(range(ITEMS)) - set(TOLERATED))  # each once, across the run and the redrive
    assert made(cluster, task_id, "undo") == Counter(dict.fromkeys(TOLERATED, 1))  # the debris of each, once
    rerun = {n["item"] for n in read_ledger(cluster.ledger)
             if n["task"] == task_id and n["op"] == "apply" and n["time"] > redriven_at}
    assert not rerun & before, sorted(rerun & before)  # the redrive ran no item that had succeeded
    assert HOLDING in rerun and kills >= 2
