"""Chaos on a parallel flow: the chaos_graph diamond, whose one branch fans out over
four items, under kill -9 of busy modules while every message is delivered twice. Every task
ends; no unit's outcome is committed twice; no join is dispatched twice; rollbacks run once per
applied unit, in reverse topological order (tests/chaos/invariants.py, graph rules)."""

from __future__ import annotations

import random
import time

import pytest

from tests.chaos.evidence import assert_clean
from tests.chaos.harness import Supervisor
from tests.chaos.plans import GRAPH_PLANS, SCENARIO_TIMEOUT, scale
from tests.chaos.report import record
from tests.chaos.test_message_faults import Duplicator
from tests.chaos.test_module_faults import pick_busy_victim
from tests.support.item_view import with_items

pytestmark = [pytest.mark.chaos, pytest.mark.rabbitmq, pytest.mark.slow,
              pytest.mark.timeout(SCENARIO_TIMEOUT)]


def test_kill_9_and_duplicated_deliveries_on_a_parallel_flow(make_cluster):
    cluster = make_cluster()
    cluster.start_standard()
    cycles, burst, period = scale(3, 15), scale(10, 20), scale(2.5, 3.0)
    rng = random.Random(9)
    began = time.monotonic()
    kills, ids = 0, []
    with Duplicator(cluster) as duplicator, Supervisor(cluster, cluster.module_names()) as supervisor:
        for cycle in range(cycles):
            supervisor.wait_all_up()  # the last kill's victim is back: this kill finds a live one
            started = time.monotonic()
            ids += cluster.submit_planned(burst, seed=100 + cycle, task_type="chaos_graph", plans=GRAPH_PLANS)
            kills += bool(cluster.kill9(pick_busy_victim(cluster, rng)))
            last_kill = time.monotonic()
            time.sleep(max(0.0, period - (time.monotonic() - started)))
        cluster.settle(timeout=scale(120, 300), since=last_kill)
        duplicator.drain()
        settle = cluster.settle(timeout=60, since=last_kill)
        restarts = sum(supervisor.restarts.values())
    report = cluster.check()
    record("parallel flow: kill -9 + every message twice", report,
           f"{kills} kill -9, {restarts} restarts, {duplicator.copies} copies", settle, time.monotonic() - began)
    assert_clean(cluster, report)
    assert kills == cycles and len(ids) == cycles * burst
    tasks = [with_items(cluster.store, cluster.store.get(task_id)) for task_id in ids]
    assert all(t.Steps[1].Items is not None or t.Steps[1].State.value == "waiting" for t in tasks)
    assert sum(1 for t in tasks if t.TaskStatus.name == "SUCCESS") > 0
    assert sum(1 for t in tasks if t.TaskStatus.name != "SUCCESS") > 0
