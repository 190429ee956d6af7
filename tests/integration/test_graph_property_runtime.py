"""Property: over random DAGs of up to 8 steps (plain, `for_each`, sub-flows; some
without rollback), each with random failure points (a step or one item, normal or rollback
phase), run by the REAL module runtime (claims, command child processes, retries, the outbox
and its child relay) on the in-process broker and a SQLite store: every task ends; every
applied unit is rolled back exactly once, in a valid reverse topological order; a unit that
never ran is never rolled back; no join is dispatched twice.

tests/unit/test_graph_property.py checks the same over many more graphs and delivery orders with
a simulated executor; this one proves the running engine agrees with it."""

from __future__ import annotations

import itertools
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.broker.inprocess import InProcessBroker
from common.flows import parse_flows
from common.queues import module_queue
from common.runtime.module import ModuleRuntime
from common.settings import load_settings
from common.engine.states import FINAL_STATUSES, StepState, TaskStatus
from common.store.sqlite.tasks import SqliteStore
from oss.services.tasks import TaskService
from tests.support.graph_checks import join_violations, rollback_violations
from tests.support.item_view import with_items
from tests.support.cluster import STATE_DEADLINE

EXAMPLES = 60 if os.environ.get("BATON_CHAOS") == "full" else 15
CHILD = """
  child:
    steps:
      - name: ca
        normal:   {module: prop, command: child_a}
        rollback: {module: prop, command: undo_child}
      - name: cb
        normal:   {module: prop, command: child_b}
        rollback: {module: prop, command: undo_child}
"""
_TYPES = itertools.count()
STATUSES: list[str] = []


@st.composite
def random_flow(draw):
    """(flows.yaml text, task type, parameters) for one random DAG with its failure points."""
    size = draw(st.integers(1, 8))
    lines, declared, parameters, faults = [], [], {}, []
    for index in range(size):
        after = sorted(draw(st.sets(st.integers(0, index - 1), max_size=3))) if index else []
        kind = draw(st.sampled_from(["plain", "plain", "for_each", "flow"]))
        lines.append(f"      - name: s{index}")
        lines.append(f"        after: [{', '.join(f's{a}' for a in after)}]")
        if kind == "flow":
            lines.append("        flow: child")
            continue
        if kind == "for_each":
            declared.append(f"      list{index}: {{type: array, required: true}}")
            parameters[f"list{index}"] = list(range(draw(st.integers(0, 3))))
            lines.append(f"        for_each: list{index}")
            if draw(st.booleans()):
                lines.append(f"        max_parallel: {draw(st.integers(1, 3))}")
        lines.append(f"        normal:   {{module: prop, command: n{index}}}")
        if draw(st.integers(0, 3)):  # most steps have a rollback
            lines.append(f"        rollback: {{module: prop, command: u{index}}}")
    for _ in range(draw(st.integers(0, 3))):
        command = draw(st.sampled_from([f"n{i}" for i in range(size)] + ["child_a", "child_b"]))
        rule = {"command": command, "action": "fail"}
        if draw(st.booleans()):
            rule["item"] = draw(st.integers(0, 2))
        if draw(st.integers(0, 3)) == 0:
            rule["command"] = "u" + command[1:] if command.startswith("n") else "undo_child"
            rule["phase"] = "rollback"
        faults.append(rule)
    parameters["_baton_faults"] = faults
    task_type = f"t{next(_TYPES)}"
    schema = ["    parameters:", *declared] if declared else []
    # The commands answer at once and no fault here is a hang: the timeout only bounds a broken
    # run. A short one failed healthy steps (retry 0) on a machine too loaded to start them in time.
    text = "\n".join(["version: 1", "defaults: {timeout: 300, retry: 0}", "task_types:", CHILD.strip("\n"),
                      f"  {task_type}:", *schema, "    steps:", *lines]) + "\n"
    return text, task_type, parameters


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("graph-property")
    store = SqliteStore(str(workdir / "baton.db"))
    broker = InProcessBroker()
    broker.declare(module_queue("prop"))
    run_settings = load_settings(concurrency=4, fault_injection=True, lease_seconds=10,
                                 store_url=f"sqlite:{workdir / 'baton.db'}")
    runtime = ModuleRuntime(registry_ref="tests.support.property_commands:registry",
                            settings=run_settings, store=store, broker=broker)
    runtime.start()
    yield store, broker, run_settings
    runtime.stop(grace=2)
    broker.close()
    store.close()


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(flow=random_flow())
def test_the_running_engine_rolls_back_random_graphs_in_reverse_topological_order(engine, flow):
    store, broker, run_settings = engine
    text, task_type, parameters = flow
    service = TaskService(store, broker, parse_flows(text, "flows.yaml"), run_settings)
    try:
        task_id = service.submit(task_type, parameters).task.TaskId
        family = _wait_final(store, task_id)
    finally:
        service.close()
    STATUSES.append(family[0].TaskStatus.name)
    for done in family:
        done = with_items(store, done)  # a for_each step over records: its items and their events
        assert done.Runs == [], (done.TaskId, text, parameters)
        assert rollback_violations(done) == [], (done.TaskId, text, parameters)
        assert join_violations(done) == [], (done.TaskId, text, parameters)
        if done.TaskStatus is TaskStatus.SUCCESS:
            assert all(s.State is StepState.SUCCEEDED for s in done.Steps), (text, parameters)
    parent = store.get(task_id)
    if not parameters["_baton_faults"]:
        assert parent.TaskStatus is TaskStatus.SUCCESS, (text, parent.TaskMessage)


def _wait_final(store, task_id, timeout=60.0):
    """The task and its sub-flow children, once every one of them is final."""
    deadline = time.monotonic() + max(timeout, STATE_DEADLINE)
    while True:
        parent = store.get(task_id)
        children = [store.get(s.ChildTaskId) for s in parent.Steps if s.ChildTaskId]
        family = [parent, *[c for c in children if c is not None]]
        if all(t.TaskStatus in FINAL_STATUSES and not t.Runs for t in family):
            return family
        assert time.monotonic() < deadline, f"task {task_id} not final: {parent.TaskStatus.name}"
        time.sleep(0.05)


def test_the_examples_covered_both_success_and_rollback():
    """Not vacuous: the random examples above ended every way a task can end."""
    if not STATUSES:
        pytest.skip("the property test did not run in this session")
    rolled_back = {"ROLLED_BACK", "ROLLBACK_FAILED"}  # either way, a rollback ran
    assert "SUCCESS" in STATUSES and rolled_back & set(STATUSES), STATUSES
