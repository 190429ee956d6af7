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

The second scenario (test_kill_9_through_waves_a_failure_budget_a_hold_and_its_redrive): a
rollout in waves whose failures within its budget roll back on their own, whose failure past it
holds the task, and whose redrive by an operator (the CLI) ends it, under the same kill -9 loop;
beside it, a rollout whose wave's health check fails, so the next wave never starts.
"""

from __future__ import annotations

import random
import time
from collections import Counter

import pytest

from common.engine.states import FINAL_STATUSES, Phase, StepState, TaskStatus
from common.store.items.open import open_item_store_for
from tests.chaos.evidence import assert_clean
from tests.support.ledger_file import read_ledger
from tests.chaos.harness import ChaosCluster, Supervisor
from tests.chaos.ledger_checks import check_ledger
from tests.chaos.plans import SCENARIO_TIMEOUT, scale
from tests.chaos.report import record
from tests.support.cluster import STATE_DEADLINE, wait_until
from tests.support.oss_deployment import baton

pytestmark = [pytest.mark.chaos, pytest.mark.rabbitmq, pytest.mark.slow,
              pytest.mark.timeout(SCENARIO_TIMEOUT)]

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
        # A state: a loaded machine applies the first fifth late (how late is the load, not a finding).
        assert wait_for(lambda: applied_items(ledger, big_id) >= big // 5, STATE_DEADLINE), cluster.logs()
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


# --- waves, a failure budget, a hold and its redrive -------------------------------------------------



def rollout_plan(count: int) -> tuple[list[int], int, list[int]]:
    """chaos_rollout's waves (10 %, 30 %, rest: sizes rounded up) as the items where each ends, the
    items failing for good within the step's budget of 3 (one in the canary, within its own budget
    of 1, two in the second wave), and the
    one past it (halfway through the last wave). Waves order them whatever the kills slow down:
    the budget is spent before the item that holds can start."""
    first = -(-count // 10)
    ends = [first, first - (-count * 3 // 10), count]
    return ends, [first // 2, first + 1, ends[1] - 2], ends[1] + (count - ends[1]) // 2


def item_runs(cluster: ChaosCluster, task_id: str, states: list[StepState]) -> list:
    items = open_item_store_for(cluster.store)
    try:
        return items.page_items(task_id, 0, 0, limit=1_000_000, states=states)
    finally:
        items.close()


def claimed_items(task) -> set[int]:
    return {e.Item for e in task.History if e.Event == "claimed" and e.Item is not None and e.Phase is Phase.NORMAL}


def test_kill_9_through_waves_a_failure_budget_a_hold_and_its_redrive(make_cluster, tmp_path):
    """A `chaos_rollout` (waves of 10 %, 30 % and the rest, a bake between them, a budget of 3,
    `on_failure: hold`) whose three items failing for good are tolerated (each rolled back once)
    and whose fourth holds the task; `baton redrive` (the CLI, a process of its own) reruns what
    failed or never ran. Beside it, a `chaos_rollout_checked` whose first wave's health check
    fails: the task rolls back and no item of the next wave is claimed. Replicas are killed with
    SIGKILL every `period` seconds through the first run and through the redrive."""
    ledger, effects_dir = tmp_path / "ledger.jsonl", tmp_path / "effects"
    effects_dir.mkdir()
    gate = tmp_path / "redrive-gate"  # holds the redrive's work until a kill came (fleet_commands.py)
    cluster = make_cluster(BATON_TEST_LEDGER=str(ledger), BATON_TEST_EFFECTS=str(effects_dir),
                           BATON_TEST_REDRIVE_GATE=str(gate))
    for name in REPLICAS:
        cluster.launch(name, registry=REGISTRY)
    cluster.launch("monitor")
    cluster.launch("sweeper", kind="sweeper")
    cluster.wait_ready()
    count, checked_count, kills_wanted, period = scale(60, 1000), scale(20, 200), scale(4, 20), 1.5
    ends, tolerated, holding = rollout_plan(count)
    rng = random.Random(34)
    began = time.monotonic()
    kills: list[tuple[str, float]] = []  # (phase, seconds into the run)

    def kill_while(phase: str, going, wanted: int, at_once: bool = False) -> float:
        """Every `period` s while `going()` (the first at once if `at_once`), up to `wanted`
        kills: a replica that is up, provided another one is up too (see the scenario above).
        Returns when the last kill was."""
        last, done = time.monotonic(), 0
        while done < wanted and going():
            if not (at_once and done == 0):
                time.sleep(period)
            up = [n for n in REPLICAS if cluster.procs[n].popen.poll() is None and cluster.is_ready(cluster.procs[n])]
            if len(up) >= 2 and going() and cluster.kill9(rng.choice(up)):
                kills.append((phase, round(time.monotonic() - began, 1)))
                last, done = time.monotonic(), done + 1
        return last

    with Supervisor(cluster, list(REPLICAS)) as supervisor:
        faults = [*(fail_item(item) for item in tolerated), [{**fail_item(holding)[0], "times": 1}]]
        rollout_id = cluster.submit_with([f for rule in faults for f in rule], TaskStatus.SUCCESS, "chaos_rollout",
                                         nodes=[f"r{i}" for i in range(count)], work_seconds=0.3)
        check_fails = [{"command": "check_wave", "action": "fail", "retryable": False}]
        checked_id = cluster.submit_with(check_fails, TaskStatus.ROLLED_BACK, "chaos_rollout_checked",
                                         nodes=[f"c{i}" for i in range(checked_count)], work_seconds=0.3)

        def held() -> bool:
            return cluster.store.get(rollout_id).Held is not None

        kill_while("first run", lambda: not held(), kills_wanted)
        wait_until(held, STATE_DEADLINE, "the rollout held past its budget")
        shown = cluster.store.get(rollout_id)
        assert shown.TaskStatus is TaskStatus.RUNNING and shown.Held.Item == holding, (shown.Held, shown.TaskMessage)
        # The redrive comes once every replica is up again (so the kill at the redrive finds one
        # to kill, another serving), whatever still runs then: what succeeded before it is read,
        # and nothing but the tolerated was undone.
        wait_until(lambda: all(cluster.procs[n].popen.poll() is None and cluster.is_ready(cluster.procs[n])
                               for n in REPLICAS), STATE_DEADLINE, "every replica up before the redrive")
        before = {r.Item for r in item_runs(cluster, rollout_id, [StepState.SUCCEEDED])}
        undone = {n["item"] for n in read_ledger(ledger) if n["task"] == rollout_id and n["op"] == "undo"}
        assert undone <= set(tolerated), sorted(undone)  # the hold rolled nothing back
        waiting_at_hold = len(item_runs(cluster, rollout_id, [StepState.WAITING]))
        redriven_at = time.time()
        gate.with_name(f"{gate.name}.held").touch()
        answer = baton(cluster, "redrive", rollout_id, "--reason", "the mirror is back")
        assert answer.returncode == 0, (answer.stdout, answer.stderr)
        # The first kill at once, while the redriven items wait at the gate (a loaded machine
        # would otherwise finish them while the CLI still runs): the redrive must survive it.
        going = lambda: cluster.store.get(rollout_id).TaskStatus not in FINAL_STATUSES  # noqa: E731
        last_kill = kill_while("redrive", going, 1, at_once=True)
        gate.with_name(f"{gate.name}.open").touch()
        last_kill = max(last_kill, kill_while("redrive", going, kills_wanted - 1))
        settle = cluster.settle(timeout=scale(150, 300), since=last_kill)
        restarts = sum(supervisor.restarts.values())
    report = cluster.check()
    record("fleet: waves, budget, hold + redrive, kill -9", report,
           f"{len(kills)} kill -9, {restarts} restarts; {count}+{checked_count} items, 1 redrive", settle,
           time.monotonic() - began)
    assert_clean(cluster, report)
    tasks = {t.TaskId: t for t in cluster.tasks()}
    notes = read_ledger(ledger)
    effects = check_ledger(tasks.values(), notes)
    print(f"\nCHAOS rollout kills (phase, s into the run): {kills}")
    print(f"CHAOS rollout ledger: {effects.units} units, {effects.applied} applied, {effects.undone} undone, "
          f"{effects.extra_applies} extra applies, {effects.extra_undos} extra undos; {len(before)} items "
          f"succeeded before the hold's redrive, {waiting_at_hold} never started")
    assert not effects.violations, effects.summary()

    rollout = tasks[rollout_id]
    assert rollout.TaskStatus is TaskStatus.SUCCESS and rollout.FailedItems == len(tolerated), rollout.TaskMessage
    mine = [n for n in notes if n["task"] == rollout_id]
    applied = {n["item"] for n in mine if n["op"] == "apply"}
    assert applied == set(range(count)) - set(tolerated)  # each under one key (check_ledger), the tolerated never
    assert Counter(n["item"] for n in mine if n["op"] == "undo" and n.get("made")) == Counter(tolerated)
    rerun = {n["item"] for n in mine if n["op"] == "apply" and n["time"] > redriven_at}
    assert not rerun & before, sorted(rerun & before)  # the redrive ran no item that had succeeded
    assert holding in rerun and waiting_at_hold > 0
    assert [e.Event for e in rollout.History].count("redriven") == 1
    # No item of a wave claimed before its wave opened (the kills notwithstanding).
    opened = [e.Time for e in rollout.History if e.Event == "wave_started"]
    assert len(opened) == len(ends) - 1, opened
    for end, at in zip(ends, opened):
        early = sorted({e.Item for e in rollout.History if e.Event == "claimed" and e.Item is not None
                        and e.Item >= end and e.Time < at})
        assert not early, (end, early)
    assert {phase for phase, _ in kills} == {"first run", "redrive"} and restarts >= len(kills)

    # The failed health check: the first wave ran and was checked, the next never claimed.
    checked = tasks[checked_id]
    first_wave = -(-checked_count // 4)
    assert checked.TaskStatus is TaskStatus.ROLLED_BACK and "its check" in checked.TaskMessage, checked.TaskMessage
    assert not {i for i in claimed_items(checked) if i >= first_wave}, sorted(claimed_items(checked))
    assert not {n["item"] for n in notes if n["task"] == checked_id and n["op"] == "apply"} - set(range(first_wave))
    (check,) = [t for t in tasks.values() if t.Parent is not None and t.Parent.TaskId == checked_id]
    assert [e.Event for e in checked.History].count("wave_check_started") == 1
    assert [i["Item"] for i in check.Parameters["items"]] == list(range(first_wave)), check.Parameters
    # The check ran and failed (its injected failure; or a kill cost its one attempt first).
    assert check.TaskStatus is not TaskStatus.SUCCESS and any(e.Event == "claimed" for e in check.History), check.TaskMessage
