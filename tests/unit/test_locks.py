"""Per-key locks, the pure parts (common/engine/gates/lock/table.py, common/engine/gates/lock/changes.py): who is granted,
in which order, and what a task's changes owe the lock table."""

from __future__ import annotations

import pytest

from common.engine.core.key_templates import LockKeyError, render_key, template_fields
from common.engine.gates.lock.table import (
    HELD, KEPT, LOCK_ACQUIRE, LOCK_RELEASE, RELEASED, WAITING, KeyLock, join, leave, stale_member,
)
from common.engine.gates.lock.changes import lock_granted
from common.engine.operator.actions import cancel, compensate, retry
from common.engine.operator.flow import skip
from common.engine.states import Phase, ResultCode, StepState, TaskStatus
from common.engine.core.entries import AttemptResult, Refusal, Timing, claim, create_task, finish_attempt
from common.engine.core.units import step_message
from tests.support.builders import counter_ids, make_step

IDS = counter_ids("l")


def test_join_grants_up_to_the_limit_then_queues_best_priority_then_submission_order() -> None:
    lock, granted = KeyLock(Key="k"), []
    for task, priority, seq in [("a", 0, 1), ("b", 0, 2), ("c", 0, 3), ("d", 2, 4), ("e", 0, 0.5)]:
        lock, now_granted = join(lock, task, priority, seq, limit=2, now=10)
        granted += now_granted
    assert granted == ["a", "b"]
    assert [h.TaskId for h in lock.Holders] == ["a", "b"]
    # d has the best priority; within priority 0, e was submitted before c.
    lock, granted = leave(lock, "a", now=11)
    assert granted == ["d"]
    lock, granted = leave(lock, "b", now=12)
    assert granted == ["e"]
    lock, granted = leave(lock, "d", now=13)
    assert granted == ["c"] and lock.Waiters == []


def test_join_and_leave_are_idempotent() -> None:
    lock, granted = join(KeyLock(Key="k"), "a", 0, 1, 1, 10)
    again, granted_again = join(lock, "a", 0, 1, 1, 11)
    assert granted == ["a"] and granted_again == [] and again == lock
    lock, _ = join(lock, "b", 0, 2, 1, 12)
    same, none = join(lock, "b", 0, 2, 1, 13)
    assert same == lock and none == [] and len(lock.Waiters) == 1
    lock, granted = leave(lock, "a", 14)
    twice, granted_twice = leave(lock, "a", 15)
    assert granted == ["b"] and granted_twice == [] and twice.Holders == lock.Holders


def test_a_waiter_that_leaves_gives_up_its_place_and_a_raised_limit_grants_at_once() -> None:
    lock, _ = join(KeyLock(Key="k"), "a", 0, 1, 1, 10)
    lock, _ = join(lock, "b", 0, 2, 1, 10)
    lock, _ = join(lock, "c", 0, 3, 1, 10)
    lock, granted = leave(lock, "b", 11)
    assert granted == [] and [w.TaskId for w in lock.Waiters] == ["c"]
    lock, granted = join(lock, "d", 0, 4, 3, 12)  # flows.yaml now says limit 3
    assert granted == ["c", "d"] and lock.Limit == 3


def test_key_templates_render_from_parameters_and_name_what_is_missing() -> None:
    assert render_key("cluster:{cluster}/{n}", {"cluster": "eu", "n": 3}) == "cluster:eu/3"
    assert template_fields("plain") == []
    with pytest.raises(LockKeyError, match="'cluster'"):
        render_key("cluster:{cluster}", {})
    with pytest.raises(ValueError):
        template_fields("{a.b}")


def locked_task(limit: int = 1, steps=None, priority: int = 0):
    return create_task(task_type="t", steps=steps or [make_step("a"), make_step("b")], parameters={},
                       timing=Timing(100.0), ids=IDS, lock=("k", limit), priority=priority, task_id="T")


def test_a_task_with_a_lock_waits_visibly_and_dispatches_nothing_until_granted() -> None:
    task = locked_task()
    assert task.TaskStatus is TaskStatus.NOT_STARTED and task.Runs == []
    assert task.WaitingFor is not None and (task.WaitingFor.Kind, task.WaitingFor.Key) == ("lock", "k")
    assert task.Lock.State == WAITING
    assert [e.Kind for e in task.Outbox] == [LOCK_ACQUIRE]
    assert task.Outbox[0].Body == {"Key": "k", "Limit": 1, "TaskId": "T", "Priority": 0, "Seq": 100.0}
    granted = lock_granted(task, "k", Timing(105.0), IDS)
    assert granted.WaitingFor is None and granted.Lock.State == HELD and granted.Lock.Since == 105.0
    assert [e.Kind for e in granted.Outbox] == ["publish"] and len(granted.Runs) == 1
    assert isinstance(lock_granted(granted, "k", Timing(106.0), IDS), Refusal)  # applied twice
    assert isinstance(lock_granted(task, "other", Timing(106.0), IDS), Refusal)


def run_to_end(task, fail_at: int | None = None, rollback_fails: bool = False):
    while task.Runs:
        run = task.Runs[0]
        task = claim(task, step_message(task, run), "w", Timing(110.0))
        fails = (run.Phase is Phase.NORMAL and run.Cursor == fail_at) or (run.Phase is Phase.ROLLBACK and rollback_fails)
        result = AttemptResult(ResultCode.FAILED, "boom", retryable=False) if fails else AttemptResult(ResultCode.OK)
        task = finish_attempt(task, run.DispatchId, "w", result, Timing(111.0), IDS)
    return task


def release_entries(task):
    return [e for e in task.Outbox if e.Kind == LOCK_RELEASE]


@pytest.mark.parametrize("fail_at", [None, 1])
def test_success_and_rolled_back_release_the_lock_in_the_final_change(fail_at) -> None:
    task = run_to_end(lock_granted(locked_task(), "k", Timing(101.0), IDS), fail_at=fail_at)
    assert task.TaskStatus is (TaskStatus.SUCCESS if fail_at is None else TaskStatus.ROLLED_BACK)
    assert task.Lock.State == RELEASED
    assert [e.Body for e in release_entries(task)] == [{"Key": "k", "TaskId": "T", "Generation": 0}]
    assert stale_member(task, "k")


def test_a_failed_rollback_keeps_the_lock_until_an_operator_ends_the_task() -> None:
    task = run_to_end(lock_granted(locked_task(), "k", Timing(101.0), IDS), fail_at=1, rollback_fails=True)
    assert task.TaskStatus is TaskStatus.ROLLBACK_FAILED
    assert task.Lock.State == KEPT and release_entries(task) == []
    assert not stale_member(task, "k")  # the sweeper must not reclaim it
    ended = run_to_end(compensate(task, "ops", "fixed by hand", Timing(120.0), IDS))
    assert ended.TaskStatus is TaskStatus.ROLLED_BACK and ended.Lock.State == RELEASED
    assert len(release_entries(ended)) == 1


def test_cancel_while_waiting_leaves_the_line_and_a_retry_queues_again() -> None:
    task = locked_task()
    cancelled = cancel(task, "ops", "not now", Timing(102.0), IDS)
    assert cancelled.TaskStatus is TaskStatus.ROLLED_BACK and cancelled.WaitingFor is None
    assert [e.Kind for e in cancelled.Outbox] == [LOCK_RELEASE]  # the acquire entry is dropped
    again = retry(cancelled, "ops", "now", Timing(103.0), IDS)
    assert again.TaskStatus is TaskStatus.NOT_STARTED and again.Runs == []
    assert again.Lock.State == WAITING and again.WaitingFor.Kind == "lock"
    assert [e.DispatchId for e in again.Outbox if e.Kind == LOCK_ACQUIRE] == ["T:lock:g1"]


def test_a_skip_that_runs_a_rolled_back_task_again_queues_for_its_lock_as_a_retry_does() -> None:
    failed = run_to_end(lock_granted(locked_task(), "k", Timing(101.0), IDS), fail_at=1)
    assert failed.TaskStatus is TaskStatus.ROLLED_BACK and failed.Lock.State == RELEASED
    again = skip(failed, "ops", "b is done by hand", Timing(120.0), IDS, cursor=1)
    # Not started until the lock is granted again: nothing runs without the lock.
    assert again.TaskStatus is TaskStatus.NOT_STARTED and again.Runs == []
    assert again.Lock.State == WAITING and again.WaitingFor.Kind == "lock"
    assert [e.DispatchId for e in again.Outbox if e.Kind == LOCK_ACQUIRE] == ["T:lock:g1"]


def test_stale_members_are_tasks_gone_done_or_keyed_otherwise() -> None:
    task = locked_task()
    assert stale_member(None, "k")
    assert not stale_member(task, "k")
    assert stale_member(task, "other")


def test_a_task_without_lock_is_untouched() -> None:
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(1.0), ids=IDS)
    assert task.Lock is None and task.WaitingFor is None and task.Steps[0].State is StepState.RUNNING
    done = run_to_end(task)
    assert release_entries(done) == []


def test_a_sub_flow_child_takes_its_own_types_lock_keyed_by_its_parameters() -> None:
    from common.engine.kinds.sub_flow.changes import start_child
    from common.engine.document import ChildTemplate, LockTemplate

    parent_step = make_step("sub")
    parent_step.NormalModule = parent_step.NormalCommand = None
    parent_step.RollbackModule = parent_step.RollbackCommand = None
    parent_step.Flow, parent_step.FlowInputs = "child", {"name": "db"}
    parent_step.FlowTemplate = ChildTemplate(TaskType="child", Steps=[make_step("c")],
                                             Lock=LockTemplate(Key="db:{name}", Limit=2))
    parent = create_task(task_type="p", steps=[parent_step], parameters={"db": "x"}, timing=Timing(1.0), ids=IDS,
                         task_id="P", lock=("p", 1))
    parent = lock_granted(parent, "p", Timing(2.0), IDS)
    (start,) = [e for e in parent.Outbox if e.Kind == "start_child"]
    child = start_child(start.Body, Timing(3.0), IDS)
    assert child.Lock.Key == "db:x" and child.Lock.Limit == 2 and child.WaitingFor.Kind == "lock"
    assert child.Runs == [] and [e.Kind for e in child.Outbox] == [LOCK_ACQUIRE]


FLOWS = """version: 1
task_types:
  t:
    lock: {key: "cluster:{cluster}/{region}", limit: 2}
    parameters:
      cluster: {type: string, required: true}
      password: {type: string, secret: true}
    steps:
      - name: a
        normal: {module: m, command: c}
"""


def test_the_loader_names_file_line_and_path_of_a_bad_lock_key() -> None:
    from common.errors import FlowError
    from common.flows.loader import parse_flows

    with pytest.raises(FlowError) as error:
        parse_flows(FLOWS)
    assert str(error.value).count("flows.yaml:4: task_types.t.lock.key: names unknown parameter \"region\"") == 1
    with pytest.raises(FlowError, match="names secret parameter"):
        parse_flows(FLOWS.replace("{region}", "{password}"))
    with pytest.raises(FlowError, match="lock.limit"):
        parse_flows(FLOWS.replace("/{region}", "").replace("limit: 2", "limit: 0"))
    lock = parse_flows(FLOWS.replace("/{region}", "")).get("t").lock
    assert (lock.Key, lock.Limit) == ("cluster:{cluster}", 2)


def test_the_docs_lock_example_loads() -> None:
    from common.flows.loader import parse_flows
    from tests.support.doc_examples import blocks

    page = "docs/guide/locks-and-waits.md"
    (example,) = blocks(page, "Locks", "yaml")
    flow = parse_flows(example, page).get("resize_cluster")
    assert (flow.lock.Key, flow.lock.Limit) == ("cluster:{cluster}", 5)
    assert [s.Lock.Key if s.Lock else None for s in flow.steps] == [None, "host:{item}"]


def test_a_delayed_start_asks_for_the_lock_only_when_due() -> None:
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0), ids=IDS,
                       lock=("k", 1), start_at=500.0)
    assert [(e.Kind, e.DueAt) for e in task.Outbox] == [(LOCK_ACQUIRE, 500.0)]


@pytest.mark.parametrize("one, other", [
    (3, 3.0),  # one number, as two JSON clients write it
    ({"region": "eu", "zone": 1}, {"zone": 1, "region": "eu"}),  # one mapping, its keys in another order
    ([{"a": 1, "b": 2.0}], [{"b": 2, "a": 1}]),
    ({"password": "pw", "n": 1}, {"n": 1.0, "password": "pw"}),  # a digest, of the same value
])
def test_one_value_makes_one_key_however_its_json_was_written(one, other):
    # Two keys for one value would let two tasks hold one exclusive lock (or share no rate window).
    assert render_key("db:{shard}", {"shard": one}) == render_key("db:{shard}", {"shard": other})


def test_values_that_differ_still_make_keys_that_differ():
    keys = {render_key("db:{shard}", {"shard": value}) for value in (3, 3.5, "3.5", True, None, {"a": 1}, {"a": 2})}
    assert len(keys) == 6  # 3.5 and "3.5" are written alike in a key, as they were
