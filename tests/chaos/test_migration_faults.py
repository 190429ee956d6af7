"""Moving tasks in flight to a corrected flow while modules are killed with kill -9.

The corrected chaos_demo gives its last step (demo_c) a longer timeout. Bursts of tasks run
while a random busy module is killed; after each burst an operator applies `migrate` to every
task of the type in flight (one compare-and-set each, racing the modules' own writes). Some
tasks have not reached demo_c and move; those that started it are refused and keep their
revision. Every task still ends as planned, each step that ran kept or rolled back exactly
once (the invariants), and a moved task ran demo_c as the corrected flow says.
"""

from __future__ import annotations

import random
import time

import pytest

from common.flows.loader import parse_flows
from tests.chaos.evidence import assert_clean
from tests.chaos.harness import Supervisor
from tests.chaos.plans import CHAOS_FLOWS, SCENARIO_TIMEOUT, plan_tasks, scale
from tests.chaos.report import record
from tests.chaos.test_module_faults import pick_busy_victim
from oss.services.migrations import Migrations

pytestmark = [pytest.mark.chaos, pytest.mark.rabbitmq, pytest.mark.slow,
              pytest.mark.timeout(SCENARIO_TIMEOUT)]

DEMO_C = "normal:   {module: monitor, command: noop, retry: 1}"
# Only chaos_demo's own step changes (the first one written; chaos_locked repeats its steps).
CORRECTED = CHAOS_FLOWS.replace(DEMO_C, "normal:   {module: monitor, command: noop, retry: 1, timeout: 6}", 1)


def test_tasks_in_flight_move_to_a_corrected_flow_under_a_kill_9_loop(make_cluster):
    assert CHAOS_FLOWS.index("chaos_demo:") < CHAOS_FLOWS.index(DEMO_C) < CHAOS_FLOWS.index("chaos_graph:")
    cluster = make_cluster()
    cluster.start_standard()
    corrected = parse_flows(CORRECTED, "flows.yaml")
    target = corrected.get("chaos_demo").content_hash
    migrations = Migrations(cluster.store, corrected, cluster.service.actions, time.time, redeliver_after=5.0)
    cycles, burst = scale(3, 16), scale(12, 20)
    rng = random.Random(27)
    moved, refused, kills = set(), 0, 0
    began = time.monotonic()
    with Supervisor(cluster, cluster.module_names()) as supervisor:
        for cycle in range(cycles):
            # A third of each burst starts in a second: not started yet, it always moves.
            for index, (plan, faults, expected) in enumerate(plan_tasks(burst, seed=100 + cycle)):
                start_at = time.time() + 1.0 if index % 3 == 0 else None
                task = cluster.service.submit("chaos_demo", {"plan": plan, "_baton_faults": faults}, start_at=start_at).task
                cluster.planned[task.TaskId] = expected
            kills += bool(cluster.kill9(pick_busy_victim(cluster, rng)))
            result = migrations.run("chaos_demo", target, actor="chaos", reason="demo_c needs 6 s", dry_run=False)
            moved.update(result.moved)
            refused += len(result.refused)
            last_kill = time.monotonic()
            time.sleep(scale(1.5, 2.5))
        settle = cluster.settle(timeout=scale(120, 300), since=last_kill)
        restarts = sum(supervisor.restarts.values())
    report = cluster.check()
    record("migrate under kill -9", report, f"{len(moved)} moved, {refused} refusals, {kills} kill -9, "
           f"{restarts} restarts", settle, time.monotonic() - began)  # fmt: skip
    assert_clean(cluster, report)
    assert moved, "no task moved"
    for task in cluster.tasks():
        migrated = [e for e in task.History if e.Event == "migrated"]
        if task.TaskId in moved:
            assert task.FlowHash == target and len(migrated) == 1 and migrated[0].Actor == "chaos"
            assert task.Steps[2].NormalTimeout == 6
        else:
            assert task.FlowHash != target and not migrated and task.Steps[2].NormalTimeout == 5
