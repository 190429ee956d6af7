"""End to end: real module processes, the real RabbitMQ, the SQLite store."""

from __future__ import annotations

import json
import time

import pytest

from common.engine.document import StepMessage
from common.queues import dead_letter_queue
from common.engine.states import Phase, ResultCode, StepState, TaskStatus
from common.engine.core.entries import Timing, create_task
from tests.support.cluster import commits, wait_until

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
STEPS = ["check_resource", "init_instance", "deduct_resource"]


def fault(command, action="fail", **extra):
    return {"command": command, "action": action, **extra}


def test_three_step_task_succeeds_across_three_processes(cluster):
    task = cluster.wait_final(cluster.submit("create_mysql_instance", name="app_1").TaskId)
    assert task.TaskStatus is TaskStatus.SUCCESS and task.TaskMessage == ""
    for step in task.Steps:
        assert step.State is StepState.SUCCEEDED and step.Code is ResultCode.OK
        assert step.TimeStart is not None and step.TimeEnd is not None and step.TimeStart <= step.TimeEnd
        assert step.Message == ""
    # Earlier steps' results are in Parameters, and later steps used them.
    assert task.Parameters["host"] == "host-1"
    assert task.Parameters["instance"]["host"] == "host-1"
    assert task.Parameters["deducted_reservation"] == task.Parameters["reservation_id"]
    assert task.TaskCursor == 2 and task.TimeEnd >= task.TimeStart >= task.TimeCreate
    assert set(commits(task).values()) == {1}


@pytest.mark.parametrize("failing", [0, 1, 2])
def test_failure_at_each_step_rolls_back_it_and_every_earlier_step_in_reverse(cluster, failing):
    params = {"_baton_faults": [fault(STEPS[failing])]}
    task = cluster.wait_final(cluster.submit("create_mysql_instance", **params).TaskId)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    assert f"step {failing} ({STEPS[failing]}) failed: injected failure" in task.TaskMessage
    rollbacks = [e.Cursor for e in task.History if e.Event == "rollback_succeeded"]
    assert rollbacks == list(range(failing, -1, -1))
    # The failing step was tried 1 + retry times, then rolled back; later steps never ran.
    assert task.Steps[failing].Attempts == 2
    assert [s.State for s in task.Steps[failing + 1:]] == [StepState.WAITING] * (2 - failing)
    assert all(s.State is StepState.ROLLED_BACK for s in task.Steps[: failing + 1])


def test_failed_rollback_raises_alarm_on_the_monitor_and_ends_rollback_failed(cluster):
    params = {"_baton_faults": [fault("init_instance"), fault("clean_instance", phase="rollback")]}
    task = cluster.wait_final(cluster.submit("create_mysql_instance", **params).TaskId)
    assert task.TaskStatus is TaskStatus.ROLLBACK_FAILED
    assert task.Steps[1].State is StepState.ROLLBACK_FAILED
    assert task.Steps[0].State is StepState.SUCCEEDED  # never reached: an operator must act
    # The alarm travelled through the monitor's alarm queue into the store.
    wait_until(lambda: any(a.TaskId == task.TaskId for a in cluster.store.list_alarms()), 15, "alarm stored")
    alarm = next(a for a in cluster.store.list_alarms() if a.TaskId == task.TaskId)
    assert (alarm.Kind, alarm.Cursor, alarm.Phase, alarm.Command) == ("rollback_failed", 1, Phase.ROLLBACK, "clean_instance")
    assert any(e.get("event") == "ALARM" and e.get("task_id") == task.TaskId for e in cluster.log_events("monitor"))


def test_hung_command_is_stopped_retried_with_backoff_and_the_module_keeps_consuming(cluster):
    hanging = cluster.submit("hang_prone", _baton_faults=[fault("init_instance", "hang", times=2)])
    wait_until(lambda: cluster.store.get(hanging.TaskId).Steps[0].Attempts >= 1, 30, "the first attempt hanging")
    others = [cluster.submit("create_mysql_instance").TaskId for _ in range(3)]
    for task_id in others:  # served by the same mysql process while the hang goes on
        assert cluster.wait_final(task_id, 20).TaskStatus is TaskStatus.SUCCESS
    task = cluster.wait_final(hanging.TaskId, 30)
    assert task.TaskStatus is TaskStatus.SUCCESS and task.Steps[0].Attempts == 3
    claims = [e.Time for e in task.History if e.Event == "claimed"]
    failures = [e for e in task.History if e.Event == "attempt_failed"]
    assert [f.Message for f in failures] == ["timed out after 1s; stopped"] * 2
    for claimed_at, failure in zip(claims, failures):
        # Stopped at its 1 s timeout, not before: that it was stopped at all is its message above and
        # the task's success (a hang left alone never ends), whatever the machine's load.
        assert failure.Time - claimed_at >= 1.0
    # Backoff 0.5 s then 1 s: each retry starts no earlier than its delay after the failure.
    assert claims[1] - failures[0].Time >= 0.5 and claims[2] - failures[1].Time >= 1.0


def insert_unpublished(cluster, **parameters):
    """A stored task whose step 0 message the test publishes itself (to deliver it repeatedly)."""
    steps = cluster.service._flows.get("create_mysql_instance").steps
    task = create_task(task_type="create_mysql_instance", steps=steps, parameters=parameters, timing=Timing(time.time()))
    cluster.store.insert(task)
    return task


def publish_step_0(cluster, task, times):
    (entry,) = task.Outbox
    for _ in range(times):
        cluster.broker.publish(entry.Queue, json.dumps(entry.Body).encode(), message_id=entry.DispatchId)


def test_same_step_message_delivered_twice_runs_and_commits_once(cluster):
    task = insert_unpublished(cluster)
    publish_step_0(cluster, task, times=2)
    task = cluster.wait_final(task.TaskId)
    assert task.TaskStatus is TaskStatus.SUCCESS
    assert set(commits(task).values()) == {1}
    assert sum(1 for e in task.History if e.Event == "claimed" and e.Cursor == 0) == 1
    # The duplicate may be taken after the task ended (commits go ahead of claims): wait for it.
    def dropped() -> bool:
        return any(e.get("event") == "delivery dropped" and e.get("task_id") == task.TaskId
                   for e in cluster.log_events("resource"))

    wait_until(dropped, 30, "the second delivery dropped by the claim")


def test_crash_between_commit_and_publish_is_healed_by_the_outbox_relay(cluster):
    params = {"_baton_faults": [fault("init_instance", "crash", at="after_commit")]}
    task = cluster.submit("create_mysql_instance", **params)
    wait_until(lambda: cluster.procs["mysql"].popen.poll() is not None, 20, "mysql module to crash")
    assert cluster.procs["mysql"].popen.returncode == -9
    try:
        done = cluster.wait_final(task.TaskId, 30)  # deduct_resource is on the live resource module
    finally:
        cluster.restart("mysql")
    assert done.TaskStatus is TaskStatus.SUCCESS
    assert set(commits(done).values()) == {1}
    relayed = [e for e in cluster.log_events("sweeper") if e.get("event") == "swept" and e.get("relayed")]
    assert relayed, "the sweeper's relay should have published the step the crash left unsent"


def test_kill_9_mid_step_then_restart_finishes_the_task_without_double_commit(cluster):
    # The command hangs on its first attempt, until the kill (its timeout is far away).
    params = {"_baton_faults": [fault("init_instance", "hang", times=1)]}
    task = cluster.submit("create_mysql_instance", **params)
    wait_until(lambda: any(e.Event == "claimed" and e.Cursor == 1 for e in cluster.store.get(task.TaskId).History), 20, "step 1 claimed")
    cluster.kill("mysql")  # SIGKILL in the middle of the step
    cluster.restart("mysql")
    done = cluster.wait_final(task.TaskId, 40)
    assert done.TaskStatus is TaskStatus.SUCCESS
    assert set(commits(done).values()) == {1}
    lost = [e for e in done.History if e.Event == "attempt_failed" and e.Cursor == 1]
    assert len(lost) == 1 and "lapsed" in lost[0].Message


def test_malformed_messages_are_dead_lettered_and_the_consumer_keeps_going(cluster):
    before = cluster.broker.queue_depth(dead_letter_queue("resource"))
    alarms_before = len([a for a in cluster.store.list_alarms(limit=1000) if a.Kind == "dead_letter"])
    cluster.broker.publish("resource", b"not json at all")
    cluster.broker.publish("resource", json.dumps({"TaskId": "x", "Cursor": -1}).encode())
    cluster.broker.publish("resource", json.dumps({**StepMessage(TaskId="x", Cursor=0, Type=Phase.NORMAL, Module="mysql",
                                                                  Command="noop", Timeout=1, Retry=0, DispatchId="d", Attempt=1).model_dump(mode="json")}).encode())
    wait_until(lambda: cluster.broker.queue_depth(dead_letter_queue("resource")) == before + 3, 15, "3 dead letters")
    wait_until(lambda: len([a for a in cluster.store.list_alarms(limit=1000) if a.Kind == "dead_letter"]) == alarms_before + 3, 15, "3 alarms")
    assert cluster.wait_final(cluster.submit("create_mysql_instance").TaskId).TaskStatus is TaskStatus.SUCCESS
    assert cluster.procs["resource"].popen.poll() is None


def test_two_replicas_share_a_queue_without_running_a_step_twice(cluster):
    cluster.start_module("resource", name="resource-2", registry="tests.support.standin_commands:resource")
    try:
        tasks = [insert_unpublished(cluster) for _ in range(20)]
        for task in tasks:  # each step 0 delivered three times: the replicas race for duplicates
            publish_step_0(cluster, task, times=3)
        owners = set()
        for task in tasks:
            done = cluster.wait_final(task.TaskId)
            assert done.TaskStatus is TaskStatus.SUCCESS
            claims = [e for e in done.History if e.Event == "claimed"]
            assert len(claims) == 3 and set(commits(done).values()) == {1}
            owners.update(e.Actor for e in claims if e.Cursor in (0, 2))
        assert len(owners) == 2, f"both replicas should have worked: {owners}"
    finally:
        cluster.kill("resource-2", sig=15)
