"""The documented move from classic to quorum queues (docs/operations/cluster.md), run on real processes.

Tasks are submitted to a classic deployment whose modules are down, so their step messages
wait in the classic queues. The modules come back with BATON_QUEUE_TYPE=quorum (they consume
the quorum queues, empty), then `baton queues move-to-quorum` moves the waiting messages over.
No sweeper runs: its re-publishing of unclaimed steps would finish the tasks without the move,
so here only the move can.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from common.engine.states import TaskStatus
from common.queues import band_queues
from tests.chaos.plans import CHAOS_FLOWS
from tests.support.cluster import REPO, STATE_DEADLINE, Cluster, wait_until

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]  # the suite's guard against a hang, not a speed

TASKS = 12


def test_a_classic_deployment_moves_to_quorum_queues(rabbitmq_url, tmp_path):
    classic = Cluster(tmp_path, rabbitmq_url, CHAOS_FLOWS)
    try:
        ids = [classic.submit("chaos_demo", plan="ok").TaskId for _ in range(TASKS)]
        # Published without waiting (the outbox): waiting in the classic queue once confirmed.
        wait_until(lambda: classic.broker.queue_depth("resource") == TASKS, 30, "step messages in the classic queue")
    finally:
        classic.stop_all()

    quorum = Cluster(tmp_path, rabbitmq_url, CHAOS_FLOWS, extra_env={"BATON_QUEUE_TYPE": "quorum"})
    try:
        for module in ("resource", "mysql", "monitor"):
            quorum.start_module(module)
        assert quorum.broker.queue_depth("resource") == 0  # the quorum bands: nothing to run yet

        moved = subprocess.run(
            [sys.executable, "-m", "oss", "queues", "move-to-quorum"],
            cwd=REPO, env={**os.environ, **quorum.env}, capture_output=True, text=True, timeout=STATE_DEADLINE,
        )
        assert moved.returncode == 0, moved.stdout + moved.stderr
        assert f"resource: {TASKS} message(s) moved" in moved.stdout
        assert "resource: deleted" in moved.stdout
        assert "guest" not in moved.stdout + moved.stderr  # no credentials in what it prints

        for task_id in ids:
            assert quorum.wait_final(task_id, timeout=120).TaskStatus is TaskStatus.SUCCESS
        assert all(name.startswith("resource.q.") for name in band_queues("resource"))
        again = subprocess.run(
            [sys.executable, "-m", "oss", "queues", "move-to-quorum"],
            cwd=REPO, env={**os.environ, **quorum.env}, capture_output=True, text=True, timeout=STATE_DEADLINE,
        )
        assert again.returncode == 0 and "nothing to move" in again.stdout, again.stdout + again.stderr
    finally:
        quorum.stop_all()


def test_nothing_to_move_is_one_line_without_the_client_library_s_warnings(rabbitmq_url, tmp_path):
    """No classic queue to move: each queue it looks for is missing, which the broker says by
    closing a channel (404); that is the answer, not a warning to print, even at log level info."""
    env = {**os.environ, "BATON_BROKER_URL": rabbitmq_url, "BATON_QUEUE_TYPE": "quorum", "BATON_LOG_LEVEL": "info",
           "BATON_FLOWS_PATH": str(REPO / "flows.yaml"), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "oss", "queues", "move-to-quorum"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=STATE_DEADLINE)
    assert done.returncode == 0 and done.stdout == "no classic queue found: nothing to move\n", done
    assert "NOT_FOUND" not in done.stderr and "Channel.Close" not in done.stderr, done.stderr
