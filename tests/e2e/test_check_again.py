"""Check again later (docs/design/operations.md) with real module processes on the real RabbitMQ.

A command answering "not done yet, check again in N seconds" holds no worker slot between its
checks: on a module with ONE slot, another task's step runs while the first one waits. Shown from
the times the store recorded (claims, checks, step start and end), never from speed.
BATON_CHAOS=full checks 20 times over a minute; the normal run 20 times a quarter second apart.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from common.engine.states import FINAL_STATUSES, Phase, ResultCode, StepState, TaskStatus
from tests.support.cluster import REPO, STATE_DEADLINE, Cluster, wait_until
from tests.support.test_store import cluster_mongo_url

FULL = os.environ.get("BATON_CHAOS", "").lower() == "full"
POLLS = 20
INTERVAL = 3.0 if FULL else 0.25  # 20 checks over a minute, or over five seconds

FLOWS = """
version: 1
defaults: {timeout: 10, retry: 0}
task_types:
  wait_for_replica:
    steps:
      - name: prepare
        normal:   {module: waiter, command: quick}
        rollback: {module: waiter, command: undo}
      - name: wait_ready
        normal:   {module: waiter, command: poll}
        rollback: {module: waiter, command: undo}
  quick_one:
    steps:
      - name: quick
        normal: {module: waiter, command: quick}
  wait_each:
    parameters:
      hosts:    {type: array, required: true}
      polls:    {type: integer, default: 3}
      interval: {type: number, default: 0.2}
    steps:
      - name: each
        for_each: hosts
        max_parallel: 2
        max_wait: 60
        normal:   {module: waiter, command: poll}
        rollback: {module: waiter, command: undo}
  wait_forever:
    steps:
      - name: prepare
        normal:   {module: waiter, command: quick}
        rollback: {module: waiter, command: undo}
      - name: wait_ready
        max_wait: 1.5
        normal:   {module: waiter, command: never_done, retry: 3}
        rollback: {module: waiter, command: undo}
"""


@pytest.fixture(scope="module")
def cluster(rabbitmq_url, tmp_path_factory, request):
    """One `waiter` module process with a single worker slot, and a sweeper."""
    cluster = Cluster(tmp_path_factory.mktemp("check_again"), rabbitmq_url, FLOWS, mongo_url=cluster_mongo_url(request))
    try:
        with cluster.starting():  # side by side
            cluster.start_module("waiter", registry="tests.support.waiting_commands:waiter",
                                 BATON_CONCURRENCY="1", BATON_PREFETCH="1")
            cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()


def events(task, name, cursor, item=None):
    return [e for e in task.History if e.Event == name and e.Cursor == cursor and e.Item == item
            and e.Phase is Phase.NORMAL]


def test_a_step_checking_again_holds_no_slot_another_task_runs_meanwhile(cluster, tmp_path):
    go_ahead = tmp_path / "go-ahead"  # the waiting step ends only once the other task has
    waiting = cluster.submit("wait_for_replica", polls=POLLS, interval=INTERVAL, go_ahead=str(go_ahead))
    wait_until(lambda: events(cluster.store.get(waiting.TaskId), "check_again", 1), STATE_DEADLINE, "the first check")
    seen = cluster.store.get(waiting.TaskId)
    assert seen.Steps[1].State is StepState.RUNNING and seen.Steps[1].Progress == f"1 of {POLLS} checks"
    assert seen.Steps[1].WaitingSince is not None
    other = cluster.submit("quick_one")
    shown = subprocess.run([sys.executable, "-m", "oss", "get", waiting.TaskId], env=cluster.env, cwd=REPO,
                           capture_output=True, text=True, timeout=STATE_DEADLINE)
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"not done yet, waiting since [0-9:.]+: \d+ of 20 checks", shown.stdout), shown.stdout

    # The single slot runs the other task's step while this one waits: were a check holding the
    # slot, the other task could not end before the waiting one, which waits for it.
    other = cluster.wait_final(other.TaskId, timeout=STATE_DEADLINE)
    assert cluster.store.get(waiting.TaskId).TaskStatus not in FINAL_STATUSES
    go_ahead.touch()
    done = cluster.wait_final(waiting.TaskId, timeout=STATE_DEADLINE)

    assert done.TaskStatus is TaskStatus.SUCCESS and other.TaskStatus is TaskStatus.SUCCESS, cluster.logs()
    step = done.Steps[1]
    checks, claims = events(done, "check_again", 1), events(done, "claimed", 1)
    assert len(checks) >= POLLS and len(claims) == len(checks) + 1
    assert step.Attempts == 1 and all(c.Attempt == 1 for c in claims)  # no check counted as an attempt
    assert done.Parameters["polled"] == len(checks) and step.Progress.startswith(f"{POLLS} of {POLLS} checks")
    assert step.WaitingSince is None
    for check, next_claim in zip(checks, claims[1:]):  # each check came when it was asked for
        assert next_claim.Time >= check.Time + INTERVAL
    quick = other.Steps[0]
    assert checks[0].Time < quick.TimeStart and quick.TimeEnd < step.TimeEnd


def test_items_of_a_for_each_step_check_again_each_on_its_own(cluster):
    task = cluster.submit("wait_each", hosts=["h0", "h1", "h2"], polls=3, interval=0.1)
    task = cluster.wait_final(task.TaskId, timeout=STATE_DEADLINE)
    assert task.TaskStatus is TaskStatus.SUCCESS, cluster.logs()
    assert task.Parameters["each"] == [{"polled": 3}] * 3
    for item in range(3):
        assert len(events(task, "check_again", 0, item)) == 3
        assert task.Steps[0].Items[item].Attempts == 1 and task.Steps[0].Items[item].Progress == "3 of 3 checks"


def test_past_max_wait_the_step_fails_like_a_timeout_and_the_task_rolls_back(cluster):
    task = cluster.submit("wait_forever", interval=0.2)
    task = cluster.wait_final(task.TaskId, timeout=STATE_DEADLINE)
    step = task.Steps[1]
    assert task.TaskStatus is TaskStatus.ROLLED_BACK, cluster.logs()
    assert step.Code is ResultCode.TIMED_OUT and "max_wait 1.5s" in step.Message and "still waiting" in step.Message
    assert step.State is StepState.ROLLED_BACK and task.Steps[0].State is StepState.ROLLED_BACK
    assert step.Attempts == 1  # its three retries were not used: the wait itself ran out
    checks = events(task, "check_again", 1)
    assert len(checks) >= 2 and step.TimeEnd - step.TimeStart >= 1.5
