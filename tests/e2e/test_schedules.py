"""Schedules end to end: two sweeper processes, a schedule every second, one task per tick.

The sweeper that holds the lease-lock is killed with SIGKILL half-way: the other takes the lock
over once it lapses and runs the ticks that came due meanwhile (they are within the misfire
grace), so no tick is lost and none runs twice. The normal run kills it after a few ticks and
stops once sweeper-b has caught up with the present; BATON_CHAOS=full runs about a minute.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from common.flows import load_flows
from common.scheduling import Overlap
from common.engine.states import FINAL_STATUSES
from common.store.tasks.filters import TaskFilter
from oss.services.schedules import ScheduleService
from tests.support.cluster import STATE_DEADLINE, Cluster, wait_until

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
FLOWS = """
version: 1
task_types:
  heartbeat:
    steps:
      - name: record
        normal: {module: monitor, command: noop, timeout: 5}
"""
FULL = os.environ.get("BATON_CHAOS") == "full"
TICKS_BEFORE_KILL = 30 if FULL else 3  # ticks sweeper-a runs (and creates tasks for) before its kill
SOAK_AFTER_KILL = 30.0 if FULL else 0.0  # seconds sweeper-b runs on its own, past its catch-up


def test_a_schedule_every_second_creates_one_task_per_tick_across_two_sweepers(rabbitmq_url, tmp_path):
    cluster = Cluster(tmp_path, rabbitmq_url, FLOWS)
    admin = ScheduleService.open(cluster.store_url, load_flows(cluster.flows_path))
    try:
        with cluster.starting():  # side by side
            cluster.start_module("monitor")
            cluster.start_sweeper("sweeper-a")
        cluster.start_sweeper("sweeper-b")  # once sweeper-a is ready: the first to take the lock
        schedule = admin.create(name="pulse", task_type="heartbeat", parameters={},
                                interval_seconds=1.0, overlap=Overlap.ALLOW)  # fmt: skip

        def created():
            return cluster.store.list_tasks(TaskFilter(labels={"schedule": "pulse"}), limit=10_000)

        def newest_tick() -> float:
            return max((int(t.IdempotencyKey.rsplit(":", 1)[1]) / 1000 for t in created()), default=0.0)

        wait_until(lambda: len(created()) >= TICKS_BEFORE_KILL, STATE_DEADLINE, f"{TICKS_BEFORE_KILL} ticks by sweeper-a")
        cluster.kill("sweeper-a", signal.SIGKILL)  # the first started: it took the lock first
        killed_at = time.time()
        # The lock lapses after 5 sweep intervals + 5 s (common/relay/sweeper.py): sweeper-b takes over
        # then and catches up on the ticks that came due meanwhile. Only sweeper-b can create a
        # tick due after the kill: one says it has taken over (none lost before it: checked below).
        time.sleep(SOAK_AFTER_KILL)
        wait_until(lambda: newest_tick() > killed_at + 1, STATE_DEADLINE, "sweeper-b taking over")
        admin.pause("pulse")

        # The last ticks' tasks may still be running, and a round that had started a tick before
        # the pause records it just after its task exists: wait for both states.
        def settled() -> bool:
            tasks = created()
            return all(t.TaskStatus in FINAL_STATUSES for t in tasks) and admin.get("pulse").Fired == len(tasks)

        wait_until(settled, STATE_DEADLINE, "scheduled tasks end and the schedule counts each one")
        tasks = created()
        ticks = sorted(int(t.IdempotencyKey.rsplit(":", 1)[1]) for t in tasks)
        assert len(ticks) == len(set(ticks)), "a tick created two tasks"
        first_tick = round((schedule.TimeCreate + 1) * 1000)
        assert ticks[0] == first_tick
        assert ticks == list(range(first_tick, ticks[-1] + 1, 1000)), "a tick was lost"
        # Every tick before the schedule's NextAt (the earliest tick not yet handled; a pause
        # keeps it) ran: the last may have been created just before the pause without NextAt
        # moving past it. A state, however far behind the sweeper ran on a loaded machine.
        after = admin.get("pulse")
        assert ticks[-1] >= round(after.NextAt * 1000) - 1000, (ticks[-1], after.NextAt)
        assert after.Fired == len(ticks) and after.Skipped == 0
    finally:
        admin.close()
        cluster.stop_all()
