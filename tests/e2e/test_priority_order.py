"""The order in which a module process claims its backlog, on quorum queues (one band queue per
message priority, all consumed at once) on the shared RabbitMQ node: highest priority first, but
no band held back for good (the three-node test of the first: tests/chaos/test_quorum_cluster.py).
And what holds around the bands: a module drain holds a step of any band at its claim, and the
sweeper's re-publication after the undrain brings it back."""

from __future__ import annotations

import pytest

from common.engine.states import TaskStatus
from tests.support.claim_order import claim_rank, first_claim
from tests.support.cluster import Cluster, commits, wait_until
from tests.support.oss_deployment import baton
from tests.support.ranked_commands import RANKED_FLOWS

pytestmark = [pytest.mark.rabbitmq]  # the suite's hang guard: each wait inside is for a state

REGISTRY = "tests.support.ranked_commands:ranked"


def test_a_priority_0_task_is_not_held_back_for_good_by_a_stream_of_priority_4(rabbitmq_url, tmp_path):
    """One slot, busy with a 1.5 s task; meanwhile one priority-0 task, then 80 priority-4 tasks
    of 0.05 s each arrive. Strict priority would claim the priority-0 task after all 80: it is
    overdue after half the hold limit (1 s here), and takes the next free slot instead."""
    backlog = 80
    cluster = Cluster(tmp_path, rabbitmq_url, RANKED_FLOWS, {
        "BATON_QUEUE_TYPE": "quorum", "BATON_THREAD_SLOTS": "1", "BATON_HOLD_LIMIT_SECONDS": "2",
    })
    try:
        cluster.start_module("ranked", registry=REGISTRY)
        blocker = cluster.service.submit("ranked", {"seconds": 1.5}, priority=4).task.TaskId
        wait_until(lambda: first_claim(cluster.store.get(blocker)) is not None, 60, "the slot taken")
        patient = cluster.service.submit("ranked", {"seconds": 0.05}, priority=0).task.TaskId
        for _ in range(backlog):
            cluster.service.submit("ranked", {"seconds": 0.05}, priority=4)
        wait_until(lambda: first_claim(cluster.store.get(patient)) is not None, 120, "the priority-0 task claimed")
        rank = claim_rank(cluster.store.list_tasks(limit=backlog + 10), patient)
        assert rank < backlog // 2, f"claimed as number {rank} of {backlog + 2}"
    finally:
        cluster.stop_all()


def test_a_drain_holds_a_priority_4_step_and_the_sweeper_lets_it_go_after_the_undrain(rabbitmq_url, tmp_path):
    cluster = Cluster(tmp_path, rabbitmq_url, RANKED_FLOWS, {"BATON_QUEUE_TYPE": "quorum"})
    try:
        drained = baton(cluster, "modules", "drain", "ranked", "--reason", "deploy", "--as", "ops:olga")
        assert drained.returncode == 0, drained.stderr
        with cluster.starting():  # side by side; the module reads its drain record at its first claim
            cluster.start_module("ranked", registry=REGISTRY)
            cluster.start_sweeper()
        urgent = cluster.service.submit("ranked", {}, priority=4).task.TaskId
        wait_until(lambda: any(run.HeldBy == "ranked" for run in cluster.store.get(urgent).Runs), 60,
                   "the step held by the drain")
        undrained = baton(cluster, "modules", "undrain", "ranked", "--reason", "done", "--as", "ops:olga")
        assert undrained.returncode == 0, undrained.stderr
        done = cluster.wait_final(urgent, timeout=60)
        assert done.TaskStatus is TaskStatus.SUCCESS and commits(done) == {(0, 0): 1}
        assert [e.Event for e in done.History if e.Event in ("waiting_for_drain", "drain_released")] == [
            "waiting_for_drain", "drain_released"]
    finally:
        cluster.stop_all()
