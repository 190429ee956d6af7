"""Modules dying under load: kill -9 at random, and a crash at each point of the step protocol."""

from __future__ import annotations

import random
import time

import pytest

from common.runtime.faults import CRASH_POINTS
from common.engine.states import TaskStatus
from tests.chaos.evidence import assert_clean, sweeper_totals
from tests.chaos.harness import Supervisor
from tests.chaos.plans import FULL, SCENARIO_TIMEOUT, crash, fail, scale
from tests.chaos.report import record, timeline

pytestmark = [pytest.mark.chaos, pytest.mark.rabbitmq, pytest.mark.slow,
              pytest.mark.timeout(SCENARIO_TIMEOUT)]

# The order of the step protocol: claim -> (ack) -> command -> commit -> publish -> mark sent.
PROTOCOL_ORDER = ["after_claim", "during_command", "before_commit", "after_commit", "after_publish"]
# The points come in two kinds: a crash before the outcome is committed loses the attempt (the
# sweeper finds its lease lapsed), one after it leaves the outcome for the relay to publish. Each
# point takes a settle of its own, so the normal test run crashes at one point of each kind: the
# attempt lost after its command ran (the later of the first kind), and the outcome committed but
# never published (the relay its only way on). `make chaos` crashes at every point.
REDUCED_POINTS = ["before_commit", "after_commit"]


def crash_rules(point: str, phase: str = "normal") -> list[dict]:
    rules = [crash(point, phase)]
    if point == "during_command":
        # The crash fires 0.2 s after the command starts: keep that first attempt running
        # (a no-op would be long done), so the module really dies in the middle of it.
        rules.append({"command": "noop" if phase == "normal" else "noop_rollback", "action": "hang",
                      "phase": phase, "times": 1})
    return rules


def pick_busy_victim(cluster, rng: random.Random, wait: float = 1.0) -> str:
    """A random module among those running a step right now (so the kill costs in-flight work),
    or any module if none is busy within `wait` seconds."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        busy = cluster.busy_modules()
        if busy:
            return rng.choice(busy)
        time.sleep(0.005)
    return rng.choice(cluster.module_names())


def test_kill_9_of_a_random_module_every_few_seconds(make_cluster):
    """Every few seconds: a burst of tasks, then kill -9 of a random module while it works on it."""
    cluster = make_cluster()
    cluster.start_standard()
    cycles, burst, period = scale(4, 20), scale(15, 20), scale(2.5, 3.0)
    rng = random.Random(6)
    began = time.monotonic()
    kills = 0
    with Supervisor(cluster, cluster.module_names()) as supervisor:
        for cycle in range(cycles):
            supervisor.wait_all_up()  # the last kill's victim is back: this kill finds a live one
            started = time.monotonic()
            cluster.submit_planned(burst, seed=cycle)
            kills += bool(cluster.kill9(pick_busy_victim(cluster, rng)))
            last_kill = time.monotonic()
            time.sleep(max(0.0, period - (time.monotonic() - started)))
        settle = cluster.settle(timeout=scale(120, 300), since=last_kill)
        restarts = sum(supervisor.restarts.values())
    report = cluster.check()
    record("kill -9 random module", report, f"{kills} kill -9, {restarts} restarts", settle, time.monotonic() - began)
    assert_clean(cluster, report)
    assert kills == cycles and restarts >= kills


def test_a_crash_at_each_point_of_the_step_protocol(make_cluster):
    """Each crash rule SIGKILLs the module at that point on a step's first attempt; the
    supervisor restarts it. One task's rule fires on every module in turn (all steps run `noop`)."""
    assert set(PROTOCOL_ORDER) == CRASH_POINTS, "a crash point was added: add it here"
    cluster = make_cluster()
    cluster.start_standard()
    crashing, healthy = scale(1, 4), scale(6, 40)
    with Supervisor(cluster, cluster.module_names()) as supervisor:
        for index, point in enumerate(PROTOCOL_ORDER):
            if not FULL and point not in REDUCED_POINTS:
                continue
            began = time.monotonic()
            before = sum(supervisor.restarts.values())
            swept_before = sweeper_totals(cluster)
            ids = cluster.submit_planned(healthy, seed=100 + index)
            crash_ids = []
            for n in range(crashing):
                # One in two also fails step c, so the crash hits the rollbacks too.
                if n % 2:
                    faults = [*crash_rules(point), fail(2), *crash_rules(point, "rollback")]
                    crash_ids.append(cluster.submit_with(faults, TaskStatus.ROLLED_BACK, point=point))
                else:
                    crash_ids.append(cluster.submit_with(crash_rules(point), TaskStatus.SUCCESS, point=point))
            ids += crash_ids
            settle = cluster.settle(timeout=scale(120, 300), since=began)
            supervisor.wait_all_ready()
            crashes = sum(supervisor.restarts.values()) - before
            report = cluster.check(ids=ids)
            record(f"crash {point}", report, f"{crashes} module crashes ({crashing} crashing task(s))",
                   settle, time.monotonic() - began)
            assert_clean(cluster, report, ids)
            # Each module crashes on its first crash-rule step (one crash may take down the first
            # attempts of several crashing tasks at once). After the last step there is nothing
            # to publish, so `after_publish` fires on two modules only.
            assert crashes >= (2 if point == "after_publish" else 3), f"{point}: {crashes} crashes"
            swept = sweeper_totals(cluster) - swept_before
            if point in ("after_claim", "during_command", "before_commit"):
                # The claimed first attempt died with its module, every time (before_commit: its
                # command done, its outcome not recorded): the sweeper found the lease lapsed and
                # the second attempt did the work.
                for task_id in crash_ids:
                    task = cluster.store.get(task_id)
                    crashing_phases = {r["phase"] for r in task.Parameters["_baton_faults"] if r["action"] == "crash"}
                    for phase in {e.Phase for e in task.History if e.Event == "claimed" and e.Attempt == 1
                                  and e.Phase.label in crashing_phases}:
                        for cursor in {e.Cursor for e in task.History if e.Event == "claimed" and e.Phase is phase}:
                            lost = [e for e in task.History if e.Cursor == cursor and e.Phase is phase
                                    and e.Attempt == 1 and e.Actor == "sweeper"]
                            assert lost, f"{point}: step {cursor} {phase.label} attempt 1 not lost\n{timeline(task)}"
                assert swept["lapsed"] >= 3, swept
            else:
                # The outcome was committed before the crash: the relay published what the dead
                # module owed the broker (after_publish: published it again).
                assert swept["relayed"] >= 1, swept
