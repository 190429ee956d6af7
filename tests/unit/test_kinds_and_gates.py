"""The step kinds and gates behind their base classes (common/engine/kinds/kind.py,
common/engine/gates/gate.py): the registry finds each step's kind by the kind it declares, every
kind and gate is one of its base class, and the task gates answer as routing and advance need."""

from __future__ import annotations

import inspect
import json

import pytest

from common.engine.document import ChildTemplate, OperatorRequest, Step, Task
from common.engine.gates.gate import Gate, Hold
from common.engine.registry import GATES, earliest_due, expiry, held
from common.engine.kinds.kind import StepKind
from common.engine.registry import KINDS, UnknownKind, kind_of
from common.engine.core.entries import Timing, create_task
from common.engine.core.step_doc import implied_kind
from common.engine.registry import flows_parts
from common.flows.loader import parse_flows
from common.flows.schema import StepSpec
from tests.support.builders import counter_ids, make_step
from tests.support.cluster import REPO


def test_every_kind_and_gate_is_one_of_its_base_class():
    assert all(isinstance(kind, StepKind) and kind.name == name for name, kind in KINDS.items())
    assert all(isinstance(gate, Gate) for gate in GATES)
    assert len({g.name for g in GATES}) == len(GATES)


def test_the_registry_finds_each_steps_kind_by_the_kind_it_declares():
    command, flow, items = make_step("a"), make_step("b"), make_step("c")
    flow.Flow, flow.FlowTemplate = "child", ChildTemplate(TaskType="child", Steps=[make_step("x")])
    items.ForEach = "hosts"
    task = create_task(task_type="t", steps=[command, flow, items], parameters={}, timing=Timing(1.0), ids=counter_ids())
    assert [kind_of(step).name for step in task.Steps] == ["command", "sub_flow", "for_each"]
    flow.ForEach = "hosts"  # a sub-flow over items: a for_each step whose items each run a child
    assert kind_of(Step.model_validate(flow.model_dump())).name == "for_each"
    declared = make_step("d")
    declared.Kind = "approval"  # a kind this process does not know: named, not guessed
    with pytest.raises(UnknownKind, match="kind 'approval'"):
        kind_of(declared)


def test_a_step_stored_before_kinds_were_declared_reads_as_the_kind_its_fields_imply():
    stored = {"TaskId": "old", "TaskType": "t", "TimeCreate": 1.0, "Steps": [
        {"Name": "a", "NormalModule": "m", "NormalCommand": "c"},
        {"Name": "b", "Flow": "child", "FlowTemplate": {"TaskType": "child", "Steps": [{"Name": "x"}]}},
        {"Name": "c", "ForEach": "hosts", "NormalModule": "m", "NormalCommand": "c"},
    ], "Active": None}  # format 1 too
    for task in (Task.from_doc(stored), Task.from_json(json.dumps(stored))):
        assert [step.Kind for step in task.Steps] == ["command", "sub_flow", "for_each"]
        assert kind_of(task.Steps[1].FlowTemplate.Steps[0]).name == "command"  # a child's template too
        # Written as it was read: the kinds its fields imply stay implied (a process that
        # predates them reads it), and a flow's content hash does not change.
        assert all("Kind" not in step for step in task.to_doc()["Steps"])
    declared = make_step("d")
    declared.Kind = "approval"
    assert declared.model_dump()["Kind"] == "approval" and Step.model_validate(declared.model_dump()).Kind == "approval"


def test_the_task_gates_hold_delay_and_expire_as_the_document_says():
    ids = counter_ids("g")
    plain = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0), ids=ids)
    assert held(plain) is Hold.NONE and expiry(plain, 100.0) is None and earliest_due(plain, 100.0, 90.0) == 100.0  # never before now
    locked = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0), ids=ids, lock=("k", 1))
    after = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0), ids=ids, after_task="o")
    assert held(locked) is Hold.ALL and held(after) is Hold.ALL
    paused = plain.clone()
    paused.Paused = OperatorRequest(Actor="olga", Reason="patching", Time=100.0)
    assert held(paused) is Hold.STARTS
    later = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0), ids=ids,
                        start_at=500.0, deadline_seconds=10)
    assert earliest_due(later, 100.0, 100.0) == 500.0
    assert expiry(later, 510.0) is None and "deadline" in (expiry(later, 511.0) or "")


def test_a_gate_module_is_small_and_says_what_it_governs():
    for gate in GATES:
        source = inspect.getsource(inspect.getmodule(gate))
        assert len(source.splitlines()) < 60 and inspect.getmodule(gate).__doc__


def test_flows_declares_each_steps_kind_as_its_keys_say_and_as_a_reader_would_derive_it():
    catalog = parse_flows((REPO / "flows.yaml").read_text())
    steps = [step for definition in catalog.task_types.values() for step in definition.steps]
    assert {step.Kind for step in steps} == {"command", "for_each", "sub_flow"}
    # The three kinds flows.yaml declares are the ones a document stored without `Kind` reads as.
    assert all(step.Kind == implied_kind(step) for step in steps)


def test_every_kind_and_gate_key_of_a_step_is_in_the_step_schema_once():
    keys = [key for part in flows_parts() for key in part.step_keys]
    assert len(keys) == len(set(keys))
    assert set(keys) <= set(StepSpec.model_fields) and {"name", "after"} <= set(StepSpec.model_fields)


def test_the_sweeper_asks_the_gates_that_declare_a_sweep_in_the_registrys_order():
    from common.engine.core.sweeping import sweep_hooks, sweep_waits
    from common.engine.gates.after_task.sweep import sweep as after_task_sweep
    from common.engine.gates.freeze.sweep import sweep as freeze_sweep

    assert sweep_hooks() == (freeze_sweep, after_task_sweep)  # a window's end before the awaited task
    ids, reads = counter_ids("s"), []
    frozen = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0), ids=ids,
                         freeze=("maintenance", 200.0), after_task="other")
    assert sweep_waits(frozen, 150.0, reads.append) is None  # the window is still open
    thawed = sweep_waits(frozen, 200.0, reads.append)
    assert thawed is not None and thawed.flush and not reads  # its end is read from the task alone
    woken = thawed.change(frozen, Timing(200.0))
    assert woken.WaitingFor.Kind == "task" and woken.WaitingFor.TaskId == "other"
    assert sweep_waits(woken, 200.0, reads.append) is not None and reads == ["other"]  # looked at at once
