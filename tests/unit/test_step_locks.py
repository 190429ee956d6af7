"""A lock on one step (common/engine/gates/lock/unit_locks.py), the pure parts: each unit waits in `waiting_lock`,
holds the key from its grant until it settles (retries keep it), and gives it back or leaves
the line when it settles, is cancelled, or the task ends."""

from __future__ import annotations

from common.engine.gates.lock.table import LOCK_ACQUIRE, LOCK_RELEASE
from common.engine.document import LockTemplate, StepMessage
from common.engine.operator.actions import cancel
from common.engine.states import Phase, ResultCode, RunState, StepState, TaskStatus
from common.engine.gates.lock.unit_locks import member_id, parse_member, unit_lock_granted
from common.engine.core.entries import AttemptResult, Refusal, Timing, claim, create_task, finish_attempt
from tests.support.builders import counter_ids, make_step

IDS = counter_ids("s")


def locked_step(name: str = "a", key: str = "host:{host}", retry: int = 0):
    step = make_step(name, retry=retry)
    step.Lock = LockTemplate(Key=key, Limit=1)
    return step


def kinds(task):
    return [e.Kind for e in task.Outbox]


def finish(task, result=AttemptResult(ResultCode.OK)):
    run = next(r for r in task.Runs if r.State is RunState.PENDING)
    step = task.Steps[run.Cursor]
    message = StepMessage(TaskId=task.TaskId, Cursor=run.Cursor, Item=run.Item, Type=run.Phase, Module="mod",
                          Command=step.command(run.Phase), Timeout=5, Retry=0, DispatchId=run.DispatchId,
                          Attempt=run.Attempt)
    task = claim(task, message, "w", Timing(10.0))
    return finish_attempt(task, run.DispatchId, "w", result, Timing(11.0), IDS)


def test_members_name_the_unit() -> None:
    assert member_id("T", (2, None)) == "T#2" and member_id("T", (2, 3)) == "T#2.3"
    assert parse_member("T#2.3") == ("T", (2, 3)) and parse_member("T#2") == ("T", (2, None))
    assert parse_member("T") == ("T", None)


def test_a_locked_step_waits_then_holds_its_key_across_retries_and_releases_when_it_settles() -> None:
    task = create_task(task_type="t", steps=[locked_step(retry=1), make_step("b")], parameters={"host": "h1"},
                       timing=Timing(1.0), ids=IDS, task_id="T")
    (run,) = task.Runs
    assert run.State is RunState.WAITING_LOCK and run.Deadline is None and kinds(task) == [LOCK_ACQUIRE]
    assert task.Outbox[0].Body["Member"] == "T#0" and task.Outbox[0].Body["Key"] == "host:h1"
    assert task.UnitLocks[0].State == "waiting" and task.Steps[0].State is StepState.RUNNING
    assert isinstance(claim(task, StepMessage(TaskId="T", Cursor=0, Type=Phase.NORMAL, Module="mod", Command="do_a",
                                              Timeout=5, Retry=0, DispatchId=run.DispatchId, Attempt=1),
                            "w", Timing(2.0)), Refusal)
    granted = unit_lock_granted(task, (0, None), "host:h1", Timing(3.0))
    assert granted.Runs[0].State is RunState.PENDING and kinds(granted) == ["publish"]
    assert isinstance(unit_lock_granted(granted, (0, None), "host:h1", Timing(3.0)), Refusal)  # applied twice
    retried = finish(granted, AttemptResult(ResultCode.FAILED, "flaky"))
    assert retried.Runs[0].State is RunState.PENDING and LOCK_ACQUIRE not in kinds(retried)  # still held
    done = finish(retried)
    assert done.UnitLocks == [] and [e.Body["Member"] for e in done.Outbox if e.Kind == LOCK_RELEASE] == ["T#0"]
    assert done.Steps[1].State is StepState.RUNNING  # the next step has no lock: published at once


def test_each_item_of_a_for_each_step_asks_with_its_own_key() -> None:
    step = locked_step("each", key="host:{item}")
    step.ForEach = "hosts"
    task = create_task(task_type="t", steps=[step], parameters={"hosts": ["x", "y"]}, timing=Timing(1.0), ids=IDS,
                       task_id="T")
    assert [(e.Body["Member"], e.Body["Key"]) for e in task.Outbox] == [("T#0.0", "host:x"), ("T#0.1", "host:y")]


def test_cancel_while_a_step_waits_for_its_lock_leaves_the_line() -> None:
    task = create_task(task_type="t", steps=[locked_step()], parameters={"host": "h"}, timing=Timing(1.0), ids=IDS,
                       task_id="T")
    cancelled = cancel(task, "ops", "not now", Timing(2.0), IDS)
    assert cancelled.TaskStatus is TaskStatus.ROLLED_BACK and cancelled.Steps[0].State is StepState.CANCELLED
    assert kinds(cancelled) == [LOCK_RELEASE] and cancelled.UnitLocks == []


def test_a_failure_elsewhere_cancels_a_unit_waiting_for_its_lock() -> None:
    first, second = make_step("a"), locked_step("b")
    second.After = []
    task = create_task(task_type="t", steps=[first, second], parameters={"host": "h"}, timing=Timing(1.0), ids=IDS,
                       task_id="T")
    failed = finish(task, AttemptResult(ResultCode.FAILED, "boom", retryable=False))
    assert failed.Steps[1].State is StepState.CANCELLED and failed.UnitLocks == []
    assert LOCK_RELEASE in kinds(failed) and LOCK_ACQUIRE not in kinds(failed)


def test_the_loader_checks_a_step_locks_key() -> None:
    import pytest

    from common.errors import FlowError
    from common.flows.loader import parse_flows

    flows = """version: 1
task_types:
  leaf:
    steps:
      - {name: x, normal: {module: m, command: c}}
  t:
    parameters:
      hosts: {type: array}
    steps:
      - name: each
        for_each: hosts
        lock: {key: "host:{item}", limit: 2}
        normal: {module: m, command: c}
      - name: one
        lock: {key: "host:{host}"}
        normal: {module: m, command: c}
      - name: sub
        flow: leaf
        lock: {key: "x"}
"""
    with pytest.raises(FlowError) as error:
        parse_flows(flows)
    text = str(error.value)
    assert 'flows.yaml:15: task_types.t.steps[1].lock.key: names unknown parameter "host"' in text
    assert "task_types.t.steps[2].lock: a sub-flow step takes no lock" in text
    fixed = flows.replace('{host}', '{hosts}').split("      - name: sub")[0]
    steps = parse_flows(fixed).get("t").steps
    assert (steps[0].Lock.Key, steps[0].Lock.Limit, steps[1].Lock.Key) == ("host:{item}", 2, "host:{hosts}")


def test_a_pause_takes_a_unit_out_of_its_lock_line_and_a_late_grant_starts_nothing() -> None:
    from common.engine.operator.flow import pause, resume

    task = create_task(task_type="t", steps=[locked_step()], parameters={"host": "h"}, timing=Timing(1.0), ids=IDS,
                       task_id="T")
    paused = pause(task, "ops", "maintenance", Timing(2.0), IDS)
    assert paused.Runs == [] and paused.UnitLocks == [] and paused.Steps[0].State is StepState.WAITING
    assert kinds(paused) == [LOCK_RELEASE]  # left the line: the acquire request is gone too
    # Before: the run stayed in line, and the grant published it although the task was paused.
    assert isinstance(unit_lock_granted(paused, (0, None), "host:h", Timing(3.0)), Refusal)
    resumed = resume(paused, "ops", "done", Timing(4.0), IDS)
    assert [r.State for r in resumed.Runs] == [RunState.WAITING_LOCK] and LOCK_ACQUIRE in kinds(resumed)


def test_a_pause_gives_back_a_key_granted_to_a_unit_nobody_claimed_yet() -> None:
    from common.engine.operator.flow import pause, resume

    task = create_task(task_type="t", steps=[locked_step()], parameters={"host": "h"}, timing=Timing(1.0), ids=IDS,
                       task_id="T")
    granted = unit_lock_granted(task, (0, None), "host:h", Timing(2.0))
    paused = pause(granted, "ops", "maintenance", Timing(3.0), IDS)
    assert paused.Runs == [] and paused.UnitLocks == []
    assert [e.Body["Member"] for e in paused.Outbox if e.Kind == LOCK_RELEASE] == ["T#0"]
    resumed = resume(paused, "ops", "done", Timing(4.0), IDS)
    assert [r.State for r in resumed.Runs] == [RunState.WAITING_LOCK]  # in line again


def test_a_step_lock_key_made_too_long_at_run_time_locks_by_a_bounded_key_one_per_value() -> None:
    from common.engine.core.key_templates import MAX_KEY_LENGTH

    keys = []
    for host in ("a" * 60_000, "a" * 59_999 + "b", "h\n1"):
        task = create_task(task_type="t", steps=[locked_step()], parameters={"host": host}, timing=Timing(1.0),
                           ids=IDS, task_id="T")  # fmt: skip
        (entry,) = task.Outbox
        keys.append(entry.Body["Key"])
        assert task.UnitLocks[0].Key == entry.Body["Key"]
    long_one, other_long, with_newline = keys
    assert len(long_one) <= MAX_KEY_LENGTH and long_one.startswith("host:aaa") and "sha256:" in long_one
    assert other_long != long_one  # two values never share a key because both were cut
    assert with_newline == "host:h\\n1"  # no control character in a key: GET /locks?key= finds every one
