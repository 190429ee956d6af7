"""End to end: graph flows on real module processes, the real RabbitMQ and the SQLite
store. A diamond and a for_each flow succeed; a failure injected in each step of the diamond in
turn rolls back exactly the steps that were applied, in a valid reverse topological order; a
sub-flow's failure rolls its parent back."""

from __future__ import annotations

import pytest

from common.engine.states import Phase, StepState, TaskStatus
from tests.support.cluster import Cluster
from tests.support.graph_checks import join_violations, rollback_violations
from tests.support.test_store import cluster_mongo_url

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

GRAPH_FLOWS = """
version: 1
defaults:
  timeout: 5
  retry: 1
  backoff: {initial: 0.1, max: 0.2, multiplier: 2, jitter: 0.1}
task_types:
  diamond:
    steps:
      - name: a
        normal:   {module: resource, command: step_a}
        rollback: {module: resource, command: undo_a}
      - name: b
        after: [a]
        normal:   {module: mysql, command: step_b}
        rollback: {module: mysql, command: undo_b}
      - name: c
        after: [a]
        normal:   {module: resource, command: step_c}
        rollback: {module: resource, command: undo_c}
      - name: d
        after: [b, c]
        normal:   {module: mysql, command: step_d}
        rollback: {module: mysql, command: undo_d}
  fan_out:
    parameters:
      nodes: {type: array, required: true}
    steps:
      - name: a
        normal:   {module: resource, command: step_a}
        rollback: {module: resource, command: undo_a}
      - name: each
        for_each: nodes
        max_parallel: 3
        normal:   {module: mysql, command: step_item}
        rollback: {module: mysql, command: undo_item}
      - name: d
        normal:   {module: resource, command: step_d}
        rollback: {module: resource, command: undo_d}
  leaf:
    parameters:
      label: {type: string, required: true}
    steps:
      - name: leaf
        normal:   {module: mysql, command: step_leaf}
        rollback: {module: mysql, command: undo_leaf}
      - name: c
        normal:   {module: resource, command: step_c}
        rollback: {module: resource, command: undo_c}
  fleet:
    parameters:
      labels: {type: array}
    steps:
      - name: sub
        for_each: labels
        max_parallel: 2
        flow: leaf
        inputs: {label: item}
  with_child:
    parameters:
      label: {type: string, default: x}
    steps:
      - name: a
        normal:   {module: resource, command: step_a}
        rollback: {module: resource, command: undo_a}
      - name: sub
        flow: leaf
        inputs: {label: label}
      - name: d
        normal:   {module: mysql, command: step_d}
        rollback: {module: mysql, command: undo_d}
"""

DIAMOND = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def graph_cluster(rabbitmq_url, tmp_path_factory, request):
    """On SQLite, or on MongoDB (SecantusDB) with BATON_TEST_STORE=mongo (tests.support.test_store)."""
    cluster = Cluster(tmp_path_factory.mktemp("graph"), rabbitmq_url, GRAPH_FLOWS, mongo_url=cluster_mongo_url(request))
    try:
        with cluster.starting():  # side by side
            cluster.start_module("resource", registry="tests.support.standin_commands:resource")
            cluster.start_module("mysql", registry="tests.support.standin_commands:mysql")
            cluster.start_module("monitor")
            cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()


def fail(command, **extra):
    return {"command": command, "action": "fail", **extra}


def test_diamond_succeeds_with_the_join_after_both_branches(graph_cluster):
    task = graph_cluster.wait_final(graph_cluster.submit("diamond").TaskId)
    assert task.TaskStatus is TaskStatus.SUCCESS
    assert all(s.State is StepState.SUCCEEDED for s in task.Steps)
    events = [(e.Event, e.Cursor) for e in task.History]
    join_claimed = events.index(("claimed", 3))
    assert events.index(("step_succeeded", 1)) < join_claimed and events.index(("step_succeeded", 2)) < join_claimed
    assert join_violations(task) == []
    assert {"did_a", "did_b", "did_c", "did_d"} <= set(task.Parameters)


@pytest.mark.parametrize("failing", range(4), ids=DIAMOND)
def test_a_failure_in_each_diamond_step_rolls_back_exactly_the_applied_steps(graph_cluster, failing):
    task_id = graph_cluster.submit("diamond", _baton_faults=[fail(f"step_{DIAMOND[failing]}")]).TaskId
    task = graph_cluster.wait_final(task_id)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    assert f"step {failing} ({DIAMOND[failing]}) failed: injected failure" in task.TaskMessage
    assert rollback_violations(task) == []
    assert join_violations(task) == []
    ran = {e.Cursor for e in task.History if e.Event == "claimed" and e.Phase is Phase.NORMAL}
    rolled = [e.Cursor for e in task.History if e.Event == "rollback_succeeded"]
    assert sorted(rolled) == sorted(ran) and failing in ran  # exactly the applied steps, once each
    assert 3 not in ran or failing == 3  # the join never runs after a branch failed
    for cursor, step in enumerate(task.Steps):
        assert step.State is (StepState.ROLLED_BACK if cursor in ran else step.State)
        if cursor not in ran:
            assert step.State in (StepState.WAITING, StepState.CANCELLED)


def test_for_each_runs_an_item_per_node_and_gathers_outputs_in_order(graph_cluster):
    nodes = [f"n{i}" for i in range(7)]
    task = graph_cluster.wait_final(graph_cluster.submit("fan_out", nodes=nodes).TaskId)
    assert task.TaskStatus is TaskStatus.SUCCESS
    assert task.Parameters["each"] == [{"node": n, "index": i} for i, n in enumerate(nodes)]
    assert [i.State for i in task.Steps[1].Items] == [StepState.SUCCEEDED] * 7
    keys = {e.Item for e in task.History if e.Event == "claimed" and e.Cursor == 1}
    assert keys == set(range(7))


def test_for_each_failure_in_one_item_rolls_back_each_applied_item(graph_cluster):
    nodes = [f"n{i}" for i in range(5)]
    faults = [fail("step_item", item=2)]
    task = graph_cluster.wait_final(graph_cluster.submit("fan_out", nodes=nodes, _baton_faults=faults).TaskId)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    assert "step 1 (each) item 2 failed" in task.TaskMessage
    assert rollback_violations(task) == []
    applied = {e.Item for e in task.History if e.Event == "claimed" and e.Cursor == 1 and e.Phase is Phase.NORMAL}
    undone = [e.Item for e in task.History if e.Event == "rollback_succeeded" and e.Cursor == 1]
    assert sorted(undone) == sorted(applied) and 2 in applied
    assert task.Steps[2].State is StepState.WAITING


def test_a_sub_flow_succeeds_as_a_task_of_its_own(graph_cluster):
    parent = graph_cluster.wait_final(graph_cluster.submit("with_child", label="l1").TaskId)
    assert parent.TaskStatus is TaskStatus.SUCCESS
    child = graph_cluster.store.get(parent.Steps[1].ChildTaskId)
    assert child.TaskStatus is TaskStatus.SUCCESS and child.Parent.TaskId == parent.TaskId
    assert child.Parameters["label"] == "l1"
    assert parent.Parameters["sub"] == {"did_leaf": True, "did_c": True}


def test_a_for_each_sub_flow_runs_a_child_task_per_item(graph_cluster):
    parent = graph_cluster.wait_final(graph_cluster.submit("fleet", labels=["l1", "l2", "l3"]).TaskId)
    assert parent.TaskStatus is TaskStatus.SUCCESS
    children = [graph_cluster.store.get(f"{parent.TaskId}.0.{i}") for i in range(3)]
    assert [c.TaskStatus for c in children] == [TaskStatus.SUCCESS] * 3
    assert [c.Parameters["label"] for c in children] == ["l1", "l2", "l3"]
    assert parent.Parameters["sub"] == [{"did_leaf": True, "did_c": True}] * 3


def test_a_sub_flow_failure_rolls_the_parent_back(graph_cluster):
    task_id = graph_cluster.submit("with_child", _baton_faults=[fail("step_c")]).TaskId
    parent = graph_cluster.wait_final(task_id)
    child = graph_cluster.wait_final(f"{task_id}.1")
    assert child.TaskStatus is TaskStatus.ROLLED_BACK
    assert parent.TaskStatus is TaskStatus.ROLLED_BACK
    assert [s.State for s in parent.Steps] == [StepState.ROLLED_BACK, StepState.ROLLED_BACK, StepState.WAITING]
    assert rollback_violations(parent) == [] and rollback_violations(child) == []


def test_a_later_failure_undoes_the_child_that_succeeded(graph_cluster):
    task_id = graph_cluster.submit("with_child", _baton_faults=[fail("step_d")]).TaskId
    parent = graph_cluster.wait_final(task_id)
    child = graph_cluster.wait_final(f"{task_id}.1")
    assert parent.TaskStatus is TaskStatus.ROLLED_BACK and child.TaskStatus is TaskStatus.ROLLED_BACK
    assert [e.Cursor for e in child.History if e.Event == "rollback_succeeded"] == [1, 0]
    undo_done = next(e.Time for e in parent.History if e.Event == "rollback_succeeded" and e.Cursor == 1)
    assert all(e.Time <= undo_done for e in child.History if e.Event == "rollback_succeeded")
