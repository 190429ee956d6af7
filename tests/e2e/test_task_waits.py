"""A task's deadline and its wait for another task, end to end: modules and a sweeper as real
processes on the real RabbitMQ (SQLite store, or MongoDB on SecantusDB with BATON_TEST_STORE=mongo).

- A deadline passing while a step runs: the step finishes, no later step starts, the task rolls
  back with the deadline's message. One passing while nothing runs (the task waits for another):
  the sweeper notices it and rolls the task back.
- After another task: the waiter starts once that task succeeded (woken through the outbox of
  the module that committed the awaited task's end, not by the sweeper's recheck, minutes away),
  and never starts when it failed.
- A pause of a task whose sub-flow step runs: its child is paused too (its running step
  finishes, the next does not start), and resuming the parent resumes the child.
"""

from __future__ import annotations

import time

import pytest

from common.engine.states import RunState, StepState, TaskStatus
from tests.support.cluster import Cluster, wait_until
from tests.support.test_store import cluster_mongo_url

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

FLOWS = """
version: 1
defaults: {timeout: 10, retry: 0}
# A nap ends at its gate, opened by the test once it saw what it waits for: its timeout must not
# end it first (the deadline, 10 s, would otherwise race the nap's own 10 s timeout).
task_types:
  in_a_window:
    deadline: 10
    steps:
      - name: a
        normal:   {module: resource, command: step_a}
        rollback: {module: resource, command: undo_a}
      - name: slow
        normal:   {module: mysql, command: nap, timeout: 600}
        rollback: {module: mysql, command: undo_b}
      - name: c
        normal:   {module: resource, command: step_c}
        rollback: {module: resource, command: undo_c}
  napper:
    steps:
      - name: slow
        normal:   {module: mysql, command: nap, timeout: 600}
        rollback: {module: mysql, command: undo_b}
      - name: c
        normal:   {module: resource, command: step_c}
        rollback: {module: resource, command: undo_c}
  napper_parent:
    steps:
      - name: sub
        flow: napper
        inputs: {nap_seconds: nap_seconds, nap_gate: nap_gate}
  quick:
    steps:
      - name: a
        normal:   {module: resource, command: step_a}
        rollback: {module: resource, command: undo_a}
"""


@pytest.fixture(scope="module")
def cluster(rabbitmq_url, tmp_path_factory, request):
    cluster = Cluster(tmp_path_factory.mktemp("waits"), rabbitmq_url, FLOWS, mongo_url=cluster_mongo_url(request))
    try:
        with cluster.starting():  # side by side
            cluster.start_module("resource", registry="tests.support.standin_commands:resource")
            cluster.start_module("mysql", registry="tests.support.standin_commands:mysql")
            cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()


def events(task) -> list[tuple[str, str | None]]:
    return [(e.Event, e.Actor) for e in task.History]


def test_past_its_deadline_the_running_step_finishes_and_the_task_rolls_back(cluster, tmp_path):
    gate = tmp_path / "nap.go"  # the nap ends once the sweeper saw the deadline pass
    task_id = cluster.submit("in_a_window", nap_seconds=0, nap_gate=str(gate)).TaskId
    wait_until(lambda: ("deadline_passed", "sweeper") in events(cluster.store.get(task_id)), 60, "the deadline seen")
    gate.touch()
    task = cluster.wait_final(task_id, 30)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    assert task.TaskMessage == "rolled back: deadline passed: the task had 10 s to finish"
    assert ("deadline_passed", "sweeper") in events(task)  # nothing ended at 10 s: the sweeper saw it
    # The step running at the deadline finished (it succeeded), then was undone; c never started.
    assert [s.State for s in task.Steps] == [StepState.ROLLED_BACK, StepState.ROLLED_BACK, StepState.WAITING]
    assert task.Steps[1].Code == 0
    passed = next(e.Time for e in task.History if e.Event == "deadline_passed")
    assert passed > task.Deadline and task.Steps[1].TimeEnd > passed


def test_a_deadline_passing_while_the_task_waits_is_noticed_by_the_sweeper(cluster, tmp_path):
    gate = tmp_path / "nap.go"  # the first task naps until the waiter has ended
    first = cluster.submit("napper", nap_seconds=0, nap_gate=str(gate))
    waiter = cluster.service.submit("in_a_window", {}, after_task=first.TaskId).task
    ended = cluster.wait_final(waiter.TaskId, 30)
    assert ended.TaskStatus is TaskStatus.ROLLED_BACK and ended.TimeStart is None
    assert ended.TaskMessage == "rolled back: deadline passed: the task had 10 s to finish"
    assert cluster.store.get(first.TaskId).TaskStatus is TaskStatus.RUNNING  # still napping
    gate.touch()
    assert cluster.wait_final(first.TaskId, 30).TaskStatus is TaskStatus.SUCCESS


def test_a_task_after_another_starts_when_that_one_succeeds(cluster, tmp_path):
    gate = tmp_path / "nap.go"  # the first task naps until the second was seen waiting
    first = cluster.submit("napper", nap_seconds=0, nap_gate=str(gate))
    second = cluster.service.submit("quick", {}, idempotency_key=f"after-{first.TaskId}", after_task=first.TaskId).task
    waiting = cluster.store.get(second.TaskId)  # that it never starts early: TimeStart below
    assert waiting.TaskStatus is TaskStatus.NOT_STARTED and waiting.Runs == []
    assert (waiting.WaitingFor.Kind, waiting.WaitingFor.TaskId) == ("task", first.TaskId)
    gate.touch()
    done_first = cluster.wait_final(first.TaskId, 30)
    done_second = cluster.wait_final(second.TaskId, 30)
    assert done_first.TaskStatus is TaskStatus.SUCCESS and done_second.TaskStatus is TaskStatus.SUCCESS
    assert done_second.TimeStart >= done_first.TimeEnd
    woken = next(e for e in done_second.History if e.Event == "awaited_task_ended")
    assert woken.Actor == "oss" and woken.Message == f"task {first.TaskId} ended SUCCESS"
    # By the outbox of the module that ended the first task, not by the sweeper's late recheck.
    assert not [e for e in cluster.log_events("sweeper") if e.get("event") == "woke a task waiting for another"]


def test_a_task_after_one_that_fails_is_rolled_back_without_starting(cluster):
    first = cluster.submit("napper", nap_seconds=0.5, _baton_faults=[{"command": "step_c", "action": "fail"}])
    second = cluster.service.submit("quick", {}, after_task=first.TaskId).task
    assert cluster.wait_final(first.TaskId, 30).TaskStatus is TaskStatus.ROLLED_BACK
    ended = cluster.wait_final(second.TaskId, 30)
    assert ended.TaskStatus is TaskStatus.ROLLED_BACK and ended.TimeStart is None
    assert ended.TaskMessage == (f"rolled back: task {first.TaskId}, which this task waited for, "
                                 "ended ROLLED_BACK: not started")  # fmt: skip
    assert ended.Steps[0].State is StepState.WAITING and ended.Steps[0].Attempts == 0
    wait_until(lambda: not cluster.store.get(second.TaskId).Outbox, 30, "nothing owed")


def test_pausing_a_parent_pauses_its_running_child_and_resuming_resumes_it(cluster, tmp_path):
    gate = tmp_path / "nap.go"  # the child's step naps until its pause is recorded
    parent_id = cluster.submit("napper_parent", nap_seconds=0, nap_gate=str(gate)).TaskId
    child_id = f"{parent_id}.0"

    def child_napping() -> bool:  # claimed by the module: a step is RUNNING from its dispatch on
        child = cluster.store.get(child_id)
        return child is not None and any(r.State is RunState.RUNNING for r in child.Runs)

    wait_until(child_napping, 15, "the child's first step running")
    cluster.service.actions.apply("pause", parent_id, "olga", "db host patching")
    # The pause reaches the child (the OSS flushes the parent's outbox); the child's running step
    # finishes, and its next one does not start.
    wait_until(lambda: cluster.store.get(child_id).Paused is not None, 30, "the child paused")
    gate.touch()
    wait_until(lambda: cluster.store.get(child_id).Steps[0].State is StepState.SUCCEEDED, 15, "nap done")
    time.sleep(1.0)
    child = cluster.store.get(child_id)
    assert child.Paused is not None and child.Paused.Actor == f"parent {parent_id}"
    assert child.Paused.Reason == "olga: db host patching"
    assert child.Steps[1].State is StepState.WAITING and child.TaskStatus is TaskStatus.RUNNING
    cluster.service.actions.apply("resume", parent_id, "olga", "patched")
    parent = cluster.wait_final(parent_id, 30)
    child = cluster.store.get(child_id)
    assert parent.TaskStatus is TaskStatus.SUCCESS and child.TaskStatus is TaskStatus.SUCCESS
    assert ("resumed", f"parent {parent_id}") in events(child)

