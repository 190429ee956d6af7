"""The step kinds and gates behind their protocols (common/engine/kinds/kind.py,
common/engine/gates/gate.py): the registry picks each step's kind, every kind and gate has
each method of its protocol, and the task gates answer as routing and advance need."""

from __future__ import annotations

import inspect

from common.engine.document import ChildTemplate, OperatorRequest
from common.engine.gates.gate import Gate, Hold
from common.engine.gates.task_gates import GATES, earliest_due, expiry, held
from common.engine.gates.unit_gates import UNIT_GATES
from common.engine.kinds import fan_out
from common.engine.kinds.kind import StepKind
from common.engine.kinds.registry import KINDS, kind_of
from common.engine.transitions import Timing, create_task
from tests.support.builders import counter_ids, make_step


def members(protocol) -> set[str]:
    return {n for n, v in vars(protocol).items() if not n.startswith("_") and (callable(v) or n in protocol.__annotations__)} | \
        set(protocol.__annotations__)


def test_every_kind_and_gate_has_its_protocols_members():
    for kind in KINDS:
        assert all(hasattr(kind, m) for m in members(StepKind)), kind
    for gate in GATES + UNIT_GATES:
        assert all(hasattr(gate, m) for m in members(Gate)), gate
    assert len({k.name for k in KINDS}) == len(KINDS) and len({g.name for g in GATES + UNIT_GATES}) == len(GATES + UNIT_GATES)


def test_the_registry_picks_each_steps_kind():
    command, flow, items = make_step("a"), make_step("b"), make_step("c")
    flow.Flow, flow.FlowTemplate = "child", ChildTemplate(TaskType="child", Steps=[make_step("x")])
    items.ForEach = "hosts"
    assert kind_of(command).name == "command" and kind_of(flow).name == "sub-flow"
    assert kind_of(items).name == ("for_each" if fan_out.keeps_records(items) else "command")
    flow.ForEach = "hosts"  # a sub-flow over items keeps them inline: still a sub-flow
    assert kind_of(flow).name == "sub-flow"


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
    for gate in GATES + UNIT_GATES:
        source = inspect.getsource(inspect.getmodule(gate))
        assert len(source.splitlines()) < 60 and inspect.getmodule(gate).__doc__
