"""Injected faults (common/runtime/faults.py) in thread and async commands, in a real module
process on a real RabbitMQ: what the chaos suite's `hang` and `crash` mean for the in-process kinds.

- A hang in a thread command blocks its thread for good (a thread cannot be killed): its timeout
  still concludes the attempt, and its slot is free again for the next command of that kind.
- A hang in an async command awaits until its timeout cancels it; the loop keeps serving.
- A crash `during_command` of an in-process command kills the module while the command is
  surely in flight; after the restart the step runs again and is committed once.
"""

from __future__ import annotations

import signal
import pytest

from common.engine.states import TaskStatus
from tests.support.cluster import Cluster, commits, wait_until

pytestmark = [pytest.mark.rabbitmq]
FLOWS = """
version: 1
defaults: {timeout: 300, retry: 0}
task_types:
  thread_one:
    parameters:
      seconds: {type: number, default: 0.1}
      marks: {type: string, default: ""}
    steps:
      - name: block
        normal: {module: kinds, command: block, timeout: 2}
  async_one:
    parameters:
      seconds: {type: number, default: 0.1}
      marks: {type: string, default: ""}
    steps:
      - name: wait
        normal: {module: kinds, command: wait, timeout: 2}
  thread_retried:
    parameters:
      marks: {type: string, default: ""}
    steps:
      - name: block
        normal: {module: kinds, command: block, timeout: 30, retry: 1, backoff: {initial: 0.1, jitter: 0}}
  async_retried:
    parameters:
      marks: {type: string, default: ""}
    steps:
      - name: wait
        normal: {module: kinds, command: wait, timeout: 30, retry: 1, backoff: {initial: 0.1, jitter: 0}}
"""


@pytest.fixture(scope="module")
def cluster(rabbitmq_url, tmp_path_factory):
    """One `kinds` module with ONE thread slot, so a slot that an abandoned thread kept would
    stop every later thread command; stuck threads are tolerated (the limit is not under test).

    Shared by the file's tests (each starts its own tasks and reads its own marks): a hung
    command one test leaves behind is what the next one must run beside anyway, and a test
    whose fault kills the module restarts it."""
    cluster = Cluster(tmp_path_factory.mktemp("kind-faults"), rabbitmq_url, FLOWS)
    try:
        with cluster.starting():  # side by side
            cluster.start_module("kinds", registry="tests.support.kind_commands:kinds",
                                 BATON_THREAD_SLOTS="1", BATON_STUCK_THREADS_MAX="10")
            cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()


def test_a_hung_thread_command_times_out_and_its_slot_serves_the_next_one(cluster, tmp_path):
    hang = [{"command": "block", "action": "hang"}]
    hung = cluster.wait_final(cluster.submit("thread_one", _baton_faults=hang).TaskId)
    assert hung.TaskStatus is TaskStatus.ROLLED_BACK and "timed out after 2s" in hung.TaskMessage, hung.TaskMessage
    # The only thread slot serves again although the hung thread still blocks (forever: the
    # injected hang never returns): the slot follows the attempt, not the thread.
    after = [cluster.submit("thread_one", marks=str(tmp_path)) for _ in range(3)]
    assert [cluster.wait_final(t.TaskId).TaskStatus for t in after] == [TaskStatus.SUCCESS] * 3
    assert cluster.procs["kinds"].popen.poll() is None


def test_a_hung_async_command_is_cancelled_at_its_timeout_while_the_loop_serves_others(cluster, tmp_path):
    hang = [{"command": "wait", "action": "hang"}]
    hung = cluster.submit("async_one", _baton_faults=hang)
    others = [cluster.submit("async_one", marks=str(tmp_path)) for _ in range(5)]
    assert [cluster.wait_final(t.TaskId).TaskStatus for t in others] == [TaskStatus.SUCCESS] * 5
    done = cluster.wait_final(hung.TaskId)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK and "timed out after 2s" in done.TaskMessage, done.TaskMessage


@pytest.mark.parametrize("task_type, command", [("async_retried", "wait"), ("thread_retried", "block")])
def test_a_crash_during_an_in_process_command_kills_the_module_and_the_step_commits_once(
    cluster, tmp_path, task_type, command
):
    crash = [{"command": command, "action": "crash", "at": "during_command"}]
    task = cluster.submit(task_type, _baton_faults=crash, marks=str(tmp_path))
    module = cluster.procs["kinds"].popen
    wait_until(lambda: module.poll() is not None, 60, "the module killed by the injected crash")
    assert module.returncode == -signal.SIGKILL
    # Killed inside the command, before its body: it started nothing.
    assert not (tmp_path / f"{task.TaskId}-1.started").exists()
    cluster.restart("kinds")
    done = cluster.wait_final(task.TaskId, timeout=120)
    assert done.TaskStatus is TaskStatus.SUCCESS, done.TaskMessage
    # The lapsed lease failed attempt 1; attempt 2 ran it (the crash rule is for attempt 1 only).
    assert (tmp_path / f"{task.TaskId}-2.started").exists()
    assert commits(done) == {(0, 0): 1}
