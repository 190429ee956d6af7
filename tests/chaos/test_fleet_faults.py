"""kill -9 of module processes during a big `for_each` (items in records of their own) and while
hundreds of async commands are in flight, with items failing for good on purpose.

Two replicas of the `fleet` module (tests/chaos/fleet_commands.py: `process` commands for the
items, `async` ones awaiting a little) serve `chaos_fleet` tasks (one big for_each, and smaller
ones of which half have an item failing for good, so the task rolls back) and a burst of
`chaos_async` tasks (a fifth failing for good at their second step). A replica is killed with
SIGKILL while the for_each runs, again once the async burst is in flight, and every few seconds
after; the supervisor restarts each at once, as systemd would.

Checked: the invariants over every task (tests/chaos/invariants.py: final, committed once,
exact rollbacks in order, nothing owed, queues empty) and, from the module's own side effects
(its ledger), that every unit of a successful task was applied and committed once, and every
unit of a rolled-back task that was committed or applied was undone and its rollback committed
exactly once, and none that never ran (tests/chaos/ledger_checks.py).
"""

from __future__ import annotations

import random
import time

import pytest

from common.engine.states import TaskStatus
from tests.chaos.evidence import assert_clean
from tests.chaos.fleet_commands import read_ledger
from tests.chaos.harness import ChaosCluster, Supervisor
from tests.chaos.ledger_checks import check_ledger
from tests.chaos.plans import FULL, scale
from tests.chaos.report import record

pytestmark = [pytest.mark.chaos, pytest.mark.rabbitmq, pytest.mark.slow,
              pytest.mark.timeout(1800 if FULL else 300)]

REGISTRY = "tests.chaos.fleet_commands:fleet"
REPLICAS = ("fleet", "fleet-2")


def fail_item(item: int) -> list[dict]:
    return [{"command": "apply", "item": item, "action": "fail", "retryable": False}]


def submit_fleet(cluster: ChaosCluster, big: int, small: int, size: int) -> tuple[str, list[str]]:
    """The big for_each (succeeds), then `small` tasks of `size` items: the even ones have an item
    two thirds in failing for good (rolled back), the odd ones fail one item's first attempt."""
    big_id = cluster.submit_with([], TaskStatus.SUCCESS, "chaos_fleet", nodes=[f"n{i}" for i in range(big)])
    ids = []
    for index in range(small):
        nodes = [f"s{index}-{i}" for i in range(size)]
        if index % 2 == 0:
            ids.append(cluster.submit_with(fail_item(size * 2 // 3), TaskStatus.ROLLED_BACK, "chaos_fleet", nodes=nodes))
        else:
            retried = [{"command": "apply", "item": size // 2, "action": "fail", "times": 1}]
            ids.append(cluster.submit_with(retried, TaskStatus.SUCCESS, "chaos_fleet", nodes=nodes))
    return big_id, ids


def submit_async(cluster: ChaosCluster, count: int, rng: random.Random) -> list[str]:
    """`count` chaos_async tasks awaiting 1.5 to 3 s per step; one in five fails for good at its
    second step (its first is undone)."""
    ids = []
    for index in range(count):
        seconds = round(rng.uniform(1.5, 3.0), 2)
        if index % 5 == 4:
            faults = [{"command": "await_confirm", "action": "fail", "retryable": False}]
            ids.append(cluster.submit_with(faults, TaskStatus.ROLLED_BACK, "chaos_async", seconds=seconds))
        else:
            ids.append(cluster.submit_with([], TaskStatus.SUCCESS, "chaos_async", seconds=seconds))
    return ids


def applied_items(ledger_path, task_id: str) -> int:
    return sum(1 for n in read_ledger(ledger_path) if n["task"] == task_id and n["cursor"] == 1 and n["op"] == "apply")


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_kill_9_during_a_big_for_each_and_hundreds_of_async_commands_in_flight(make_cluster, tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    cluster = make_cluster(BATON_TEST_LEDGER=str(ledger))
    for name in REPLICAS:
        cluster.launch(name, registry=REGISTRY)
    cluster.launch("sweeper", kind="sweeper")
    cluster.wait_ready()
    big, small, size = scale(100, 2000), scale(4, 10), scale(25, 50)
    async_count, kills_wanted, period = scale(100, 500), scale(3, 10), scale(2.0, 3.0)
    rng = random.Random(12)
    began = time.monotonic()
    kills, peak = 0, 0
    with Supervisor(cluster, list(REPLICAS)) as supervisor:
        big_id, small_ids = submit_fleet(cluster, big, small, size)
        # First kill: in the middle of the big for_each.
        assert wait_for(lambda: applied_items(ledger, big_id) >= big // 5, scale(60, 300)), cluster.logs()
        kills += bool(cluster.kill9(rng.choice(REPLICAS)))
        # Second: once the async burst is in flight (claimed, awaiting).
        async_ids = submit_async(cluster, async_count, rng)

        def in_flight() -> bool:
            nonlocal peak
            peak = max(peak, cluster.running_runs("chaos_async"))
            return peak >= async_count * 4 // 5

        wait_for(in_flight, scale(30, 60))
        kills += bool(cluster.kill9(rng.choice(REPLICAS)))
        last_kill = time.monotonic()
        # Then every `period` seconds while the big for_each still runs.
        while kills < kills_wanted and cluster.store.get(big_id).TaskStatus not in (TaskStatus.SUCCESS,
                                                                                    TaskStatus.ROLLED_BACK):
            time.sleep(period)
            supervisor.wait_all_ready()  # a replica killed again before it started consumes nothing
            kills += bool(cluster.kill9(rng.choice(REPLICAS)))
            last_kill = time.monotonic()
        settle = cluster.settle(timeout=scale(150, 900), since=last_kill)
        restarts = sum(supervisor.restarts.values())
    report = cluster.check()
    items = big + small * size
    record("fleet: kill -9 in a for_each + async in flight", report,
           f"{kills} kill -9, {restarts} restarts; {items} items, {async_count} async (peak {peak} in flight)",
           settle, time.monotonic() - began)
    assert_clean(cluster, report)
    tasks = cluster.tasks()
    effects = check_ledger(tasks, read_ledger(ledger))
    print(f"\nCHAOS fleet ledger: {effects.units} units, {effects.applied} applied, {effects.undone} undone, "
          f"{effects.extra_applies} extra applies, {effects.extra_undos} extra undos")
    assert not effects.violations, effects.summary()
    # The scenario did what it says: the big for_each committed every item, the kills hit it,
    # the async commands were in flight together, and rollbacks undid committed items.
    by_id = {t.TaskId: t for t in tasks}
    assert by_id[big_id].TaskStatus is TaskStatus.SUCCESS
    assert sum(1 for e in by_id[big_id].History if e.Event == "step_succeeded" and e.Item is not None) == big
    assert kills >= min(kills_wanted, 2) and restarts >= kills
    assert peak >= async_count // 2, f"only {peak} of {async_count} async commands were in flight at once"
    assert len(async_ids) == async_count and len(small_ids) == small
    rolled_back = [by_id[i] for i in small_ids if by_id[i].TaskStatus is TaskStatus.ROLLED_BACK]
    assert rolled_back and any(e.Event == "rollback_succeeded" and e.Item is not None
                               for t in rolled_back for e in t.History)
