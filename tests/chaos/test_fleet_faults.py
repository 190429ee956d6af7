"""kill -9 of module processes during a big `for_each` (items in records of their own) and while
hundreds of async commands are in flight, with items failing for good on purpose.

Two replicas (three in full) of the `fleet` module (tests/chaos/fleet_commands.py: `process`
commands for the items, `async` ones awaiting a little) serve `chaos_fleet` tasks (one big
for_each, smaller ones of which half have an item failing for good, so the task rolls back, and
a larger one failing three quarters in) and a burst of `chaos_async` tasks (a fifth failing for good at their second step). A replica is
killed with SIGKILL while the for_each runs, again once the whole async burst is in flight
(claimed, held at a gate file), and every few seconds after while the for_each runs; the
supervisor restarts each at once, as systemd would. The monitor module consumes the alarms.

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

from common.engine.states import FINAL_STATUSES, Phase, TaskStatus
from tests.chaos.evidence import assert_clean
from tests.support.ledger_commands import read_ledger
from tests.chaos.harness import ChaosCluster, Supervisor
from tests.chaos.ledger_checks import check_ledger
from tests.chaos.plans import FULL, scale
from tests.chaos.report import record

pytestmark = [pytest.mark.chaos, pytest.mark.rabbitmq, pytest.mark.slow,
              pytest.mark.timeout(1800 if FULL else 300)]

REGISTRY = "tests.chaos.fleet_commands:fleet"
# Two replicas reduced; three in full, so a replica can be killed every period while another
# one is still starting (python's imports take seconds on two cores).
REPLICAS = ("fleet", "fleet-2", "fleet-3")[: scale(2, 3)]


def fail_item(item: int) -> list[dict]:
    return [{"command": "apply", "item": item, "action": "fail", "retryable": False}]


def submit_small(cluster: ChaosCluster, indexes: range, size: int) -> list[str]:
    """Tasks of `size` items: the even ones have an item two thirds in failing for good (rolled
    back), the odd ones fail one item's first attempt (it succeeds on the retry)."""
    ids = []
    for index in indexes:
        nodes = [f"s{index}-{i}" for i in range(size)]
        if index % 2 == 0:
            ids.append(cluster.submit_with(fail_item(size * 2 // 3), TaskStatus.ROLLED_BACK, "chaos_fleet", nodes=nodes))
        else:
            retried = [{"command": "apply", "item": size // 2, "action": "fail", "times": 1}]
            ids.append(cluster.submit_with(retried, TaskStatus.SUCCESS, "chaos_fleet", nodes=nodes))
    return ids


def lost_item_rollbacks(tasks) -> int:
    """Rollback attempts of items that a kill cost (concluded by the sweeper, lease lapsed)."""
    return sum(1 for t in tasks for e in t.History if e.Item is not None and e.Actor == "sweeper"
               and e.Phase is Phase.ROLLBACK and e.Event in ("attempt_failed", "rollback_failed"))


def submit_async(cluster: ChaosCluster, count: int, rng: random.Random, gate: str) -> list[str]:
    """`count` chaos_async tasks held at `gate`, then awaiting 0.3 to 1 s per step; one in five
    fails for good at its second step (its first is undone)."""
    ids = []
    for index in range(count):
        params = {"seconds": round(rng.uniform(0.3, 1.0), 2), "gate": gate}
        if index % 5 == 4:
            faults = [{"command": "await_confirm", "action": "fail", "retryable": False}]
            ids.append(cluster.submit_with(faults, TaskStatus.ROLLED_BACK, "chaos_async", **params))
        else:
            ids.append(cluster.submit_with([], TaskStatus.SUCCESS, "chaos_async", **params))
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
    cluster.launch("monitor")  # consumes the alarm queue: a rollback failed must not hold up settling
    cluster.launch("sweeper", kind="sweeper")
    cluster.wait_ready()
    big, small, size, undone = scale(100, 2000), scale(4, 10), scale(15, 50), scale(40, 500)
    async_count, kills_wanted, period = scale(100, 500), scale(3, 20), 1.5
    rng = random.Random(12)
    gate = tmp_path / "gate"
    began = time.monotonic()
    peak, kills = 0, []  # per kill: (seconds into the run, big task's items applied, async runs held)

    def kill(name: str) -> None:
        at = (round(time.monotonic() - began, 1), applied_items(ledger, big_id), cluster.running_runs("chaos_async"))
        if cluster.kill9(name):
            kills.append(at)

    with Supervisor(cluster, list(REPLICAS)) as supervisor:
        big_id = cluster.submit_with([], TaskStatus.SUCCESS, "chaos_fleet", nodes=[f"n{i}" for i in range(big)])
        small_ids = submit_small(cluster, range(small // 2), size)
        # First kill: in the middle of the big for_each.
        assert wait_for(lambda: applied_items(ledger, big_id) >= big // 5, scale(60, 300)), cluster.logs()
        kill(rng.choice(REPLICAS))
        # The second wave of small tasks, and one of `undone` items failing three quarters in
        # (its applied items rolled back 8 at a time), fail and roll back while the kills go on.
        small_ids += submit_small(cluster, range(small // 2, small), size)
        nodes = [f"u{i}" for i in range(undone)]
        undone_id = cluster.submit_with(fail_item(undone * 3 // 4), TaskStatus.ROLLED_BACK, "chaos_fleet", nodes=nodes)
        # Second: with the async burst in flight (claimed, every one awaiting the gate), a
        # replica holding some of them; then the gate opens.
        async_ids = submit_async(cluster, async_count, rng, str(gate))

        def in_flight() -> bool:
            nonlocal peak
            peak = max(peak, cluster.running_runs("chaos_async"))
            return peak >= async_count

        wait_for(in_flight, scale(40, 90))
        kill(rng.choice([n for n in cluster.busy_modules() if n in REPLICAS] or REPLICAS))  # holding async runs
        gate.write_text("open")
        last_kill = time.monotonic()
        # Then, while the big for_each still runs (so every kill costs work in flight, and the
        # settle time runs from a kill that did): every `period` seconds, a replica that is up,
        # provided another one is up too. (Killing the only one up, before the others are back,
        # kills the only consumer each time: a unit that outlives a replica's few seconds then
        # loses every attempt, and the run tests the retry budget instead.)
        while len(kills) < kills_wanted:
            time.sleep(period)
            if cluster.store.get(big_id).TaskStatus in FINAL_STATUSES:
                break
            up = [n for n in REPLICAS if cluster.procs[n].popen.poll() is None and cluster.is_ready(cluster.procs[n])]
            if len(up) >= 2:
                kill(rng.choice(up))
                last_kill = time.monotonic()
        settle = cluster.settle(timeout=scale(150, 300), since=last_kill)
        restarts = sum(supervisor.restarts.values())
    report = cluster.check()
    items = big + small * size + undone
    record("fleet: kill -9 in a for_each + async in flight", report,
           f"{len(kills)} kill -9, {restarts} restarts; {items} items, {async_count} async (peak {peak} in flight)",
           settle, time.monotonic() - began)
    assert_clean(cluster, report)
    tasks = cluster.tasks()
    effects = check_ledger(tasks, read_ledger(ledger))
    print(f"\nCHAOS fleet kills (s into the run, big items applied, async runs held): {kills}; "
          f"item rollback attempts lost: {lost_item_rollbacks(tasks)}")
    print(f"\nCHAOS fleet ledger: {effects.units} units, {effects.applied} applied, {effects.undone} undone, "
          f"{effects.extra_applies} extra applies, {effects.extra_undos} extra undos")
    assert not effects.violations, effects.summary()
    # The scenario did what it says: the big for_each committed every item, the kills hit it,
    # the async commands were in flight together, and rollbacks undid committed items.
    by_id = {t.TaskId: t for t in tasks}
    assert by_id[big_id].TaskStatus is TaskStatus.SUCCESS
    assert sum(1 for e in by_id[big_id].History if e.Event == "step_succeeded" and e.Item is not None) == big
    assert len(kills) >= min(kills_wanted, 2) and restarts >= len(kills)
    assert peak == async_count, f"only {peak} of {async_count} async commands were in flight at once"
    assert len(async_ids) == async_count and len(small_ids) == small
    rolled_back = [by_id[i] for i in small_ids if by_id[i].TaskStatus is TaskStatus.ROLLED_BACK]
    assert rolled_back and any(e.Event == "rollback_succeeded" and e.Item is not None
                               for t in rolled_back for e in t.History)
    # The larger failure undid items of several chains (how many depends on how far each chain
    # got before the failure: a kill holds one back until its lease lapses; a head never claimed
    # by then is cancelled, not undone).
    assert by_id[undone_id].TaskStatus is TaskStatus.ROLLED_BACK
    rolled_items = sum(1 for e in by_id[undone_id].History if e.Event == "rollback_succeeded" and e.Item is not None)
    print(f"CHAOS fleet: {rolled_items} of the {undone} items of the larger failing task rolled back")
    assert rolled_items >= 4, rolled_items  # of max_parallel's 8 chains
