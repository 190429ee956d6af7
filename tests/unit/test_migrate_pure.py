"""Moving a task in flight to a new revision of its type (common.engine.operator.migrate): only
where every step it has started is unchanged and in its place; the rest takes the new shape."""

from __future__ import annotations

import time

from common.engine.gates.lock.task_lock import LockAsk
from common.engine.operator.migrate import Revision, doubts_about, migrate
from common.engine.states import StepState, TaskStatus
from common.engine.core.entries import Refusal, Timing, create_task
from common.flows.loader import parse_flows

OLD = """
version: 1
task_types:
  make:
    parameters:
      name: {type: string, required: true}
    steps:
      - name: reserve
        normal:   {module: resource, command: noop}
        rollback: {module: resource, command: noop_rollback}
      - name: build
        normal:   {module: mysql, command: noop, timeout: 10}
        rollback: {module: mysql, command: noop_rollback}
"""


def flow(text: str):
    return parse_flows(text, "flows.yaml").get("make")


def revision(text: str) -> Revision:
    f = flow(text)
    return Revision(f.steps, f.content_hash, f.version, {"name": "a"}, None)


def task_of(text: str = OLD):
    f = flow(text)
    return create_task(task_type="make", steps=f.steps, parameters={"name": "a"}, timing=Timing(time.time()),
                       flow_hash=f.content_hash)  # fmt: skip


def moved(task, text: str):
    result = migrate(task, "olga", "fix build timeout", Timing(time.time()), revision=revision(text))
    assert not isinstance(result, Refusal), result
    return result


def test_a_change_to_a_step_not_started_moves_and_is_recorded():
    task = task_of()  # step 0 dispatched: touched; step 1 waits
    new_text = OLD.replace("timeout: 10", "timeout: 300") + """      - name: register
        normal: {module: monitor, command: noop}
"""
    new = moved(task, new_text)
    assert [s.Name for s in new.Steps] == ["reserve", "build", "register"]
    assert new.Steps[1].NormalTimeout == 300 and new.Steps[2].After == [1]
    assert new.Steps[0] == task.Steps[0] and new.Runs == task.Runs  # the dispatched step untouched
    assert new.FlowHash == flow(new_text).content_hash != task.FlowHash
    event = new.History[-1]
    assert event.Event == "migrated" and event.Actor == "olga" and "fix build timeout" in event.Message
    assert task.FlowHash in event.Message


def test_a_started_step_that_changed_moved_or_went_refuses_and_names_it():
    task = task_of()
    changed = doubts_about(task, revision(OLD.replace("command: noop}\n        rollback: {module: resource",
                                                      "command: noop, retry: 3}\n        rollback: {module: resource")))
    assert changed == ["step reserve has started and its definition changed (NormalRetry)"]
    inserted = OLD.replace("    steps:\n", "    steps:\n      - name: first\n        normal: {module: monitor, command: noop}\n")
    assert doubts_about(task, revision(inserted)) == ["step reserve has started and moves from index 0 to 1"]
    gone = OLD.replace("- name: reserve", "- name: reserve_v2")
    assert doubts_about(task, revision(gone)) == ["step reserve has started and is not in the new revision"]
    refused = migrate(task, "olga", "r", Timing(time.time()), revision=revision(gone))
    assert isinstance(refused, Refusal) and "reserve" in refused.reason


def test_a_task_not_going_forward_or_on_the_revision_already_refuses():
    task = task_of()
    same = migrate(task, "olga", "r", Timing(time.time()), revision=revision(OLD))
    assert isinstance(same, Refusal) and "already" in same.reason
    done = task.clone()
    done.TaskStatus = TaskStatus.ROLLED_BACK
    assert doubts_about(done, revision(OLD.replace("timeout: 10", "timeout: 11"))) == [
        "task is ROLLED_BACK: only a task going forward moves"]


def test_a_changed_lock_refuses():
    task = task_of()
    new = revision(OLD.replace("timeout: 10", "timeout: 11"))
    locked = Revision(new.steps, new.content_hash, None, {"name": "a"}, LockAsk("host:a", 1))
    assert doubts_about(task, locked) == ["its lock would change (none -> host:a (mode exclusive, limit 1))"]


def test_a_new_parameter_default_fills_in_and_outputs_stay():
    task = task_of()
    task.Parameters["made_by_reserve"] = "x"
    text = OLD.replace("timeout: 10", "timeout: 11")
    f = flow(text)
    new = migrate(task, "olga", "r", Timing(time.time()),
                  revision=Revision(f.steps, f.content_hash, None, {"name": "a", "size": 3}, None))
    assert new.Parameters == {"name": "a", "made_by_reserve": "x", "size": 3}
    assert new.Steps[1].State is StepState.WAITING


def test_a_task_holding_a_lock_moves_when_the_lock_stays_the_same():
    f = flow(OLD)
    task = create_task(task_type="make", steps=f.steps, parameters={"name": "a"}, timing=Timing(time.time()),
                       flow_hash=f.content_hash, lock=("host:a", 1))  # fmt: skip
    new = revision(OLD.replace("timeout: 10", "timeout: 11"))
    same = Revision(new.steps, new.content_hash, None, {"name": "a"}, LockAsk("host:a", 1))
    assert doubts_about(task, same) == []
    shared = Revision(new.steps, new.content_hash, None, {"name": "a"}, LockAsk("host:a", 1, "backup", ("backup",)))
    assert doubts_about(task, shared) == [
        "its lock would change (host:a (mode exclusive, limit 1) -> host:a (mode backup, limit 1))"]


def test_what_a_started_step_went_through_is_state_not_definition():
    task = task_of()
    task.Steps[0].Verifies, task.Steps[0].Progress = 2, "73% caught up"
    assert doubts_about(task, revision(OLD.replace("timeout: 10", "timeout: 11"))) == []
