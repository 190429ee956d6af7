"""The engine's plug-ins, in the order they are asked: the kinds of step and the gates.

A step's kind is a folder of common/engine/kinds/ whose `StepKind` subclass its `declares.py`
names (`KINDS`: the class and its place), found by folder into `KINDS`; a gate is a folder of
common/engine/gates/ whose `Gate` subclass its `declares.py` names the same way (`GATES`), found
into `GATES`. The engine calls the hooks of these tables and never names a kind or a gate.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from common.engine.core.declared import declared
from common.engine.core.units import Unit
from common.engine.document import Run, Step, Task, WaitCondition
from common.engine.gates.gate import Gate, Hold
from common.engine.kinds.kind import StepKind
from common.spec.parts import FlowsPart

__all__ = ["GATES", "KINDS", "UnknownKind", "child_asks", "earliest_due", "end_task", "enter_gates", "expiry", "flows_parts",
           "gate_of_wait", "held", "kind_declared_by", "kind_of", "move_doubts", "open_after", "plan_reads", "release_unit",
           "retry_gates", "run_hold", "start_entries", "taken"]

class UnknownKind(LookupError):
    """A step declares a kind this process does not know (one newer than its code)."""


def kind_of(step: Step) -> StepKind:
    kind = KINDS.get(step.Kind)
    if kind is None:
        raise UnknownKind(f"step {step.Name} is of kind {step.Kind!r}, which this process does not run "
                          f"(it runs {', '.join(KINDS)})")
    return kind


def declared_plug_ins(declarations: Mapping[str, tuple[str, int]], what: str = "gate") -> tuple[Any, ...]:
    """The plug-ins (`what`: gates, kinds) `declarations` name (`{name: ("module:Class", place)}`),
    in the order of their places. ValueError naming both when two take one place, or when a
    class has another name than it is declared by. (A name two folders declare is refused as
    they are merged: common.engine.core.declared.declared.)"""
    taken: dict[int, str] = {}
    for name, (_, place) in declarations.items():
        if place in taken:
            raise ValueError(f"{what}s {taken[place]} and {name} are both declared at place {place}")
        taken[place] = name
    found = []
    for name, (path, _) in sorted(declarations.items(), key=lambda row: row[1][1]):
        module, _, attribute = path.partition(":")
        plug_in = getattr(importlib.import_module(module), attribute)()
        if plug_in.name != name:
            raise ValueError(f"{path} is declared as {what} {name!r} but names itself {plug_in.name!r}")
        found.append(plug_in)
    return tuple(found)


def declared_gates(declarations: Mapping[str, tuple[str, int]]) -> tuple[Gate, ...]:
    """The gates `declarations` name, in the order of their places (declared_plug_ins)."""
    return declared_plug_ins(declarations, "gate")


def declared_kinds(declarations: Mapping[str, tuple[str, int]]) -> dict[str, StepKind]:
    """The kinds `declarations` name, by name, in the order of their places (declared_plug_ins);
    each is handed the others once all are made (a for_each step's items run as another kind)."""
    kinds: dict[str, StepKind] = {kind.name: kind for kind in declared_plug_ins(declarations, "kind")}
    for kind in kinds.values():
        kind.bind(kinds)
    return kinds


# The kinds of step, by the name a step declares (`Step.Kind`), each at the place its folder's
# declares.py gives it: command 10, for_each 20, sub_flow 30, approve 40. In flows.yaml, a step's
# keys declare its kind in this order (a step with `for_each` and `flow` is a for_each step whose
# items run child tasks); one that declares none runs a command.
KINDS: dict[str, StepKind] = declared_kinds(declared("KINDS"))


# The gates, in the one order every hook is called in. A task's creation enters each, then opens
# them in turn: a task created in a freeze window that waits for another task and takes a lock
# waits for the window, then for the task, then asks for its lock, then takes a start slot of its
# rate (WaitKind declares its waits in this order). A task's end releases its units' step locks
# before its own lock.
# Each folder's declares.py places its gates in this order: freeze 10, after_task 20, step_lock
# 30, step_rate 40, lock 50, rate 60, pause 70, start_at 80, deadline 90, drain 100.
GATES: tuple[Gate, ...] = declared_gates(declared("GATES"))


def _overriding(hook: str) -> tuple[Gate, ...]:
    """The gates, in order, whose `hook` is their own: the others' is Gate's, which has no say.
    The hooks asked on every change ask only these (most gates leave most hooks alone)."""
    return tuple(gate for gate in GATES if getattr(type(gate), hook) is not getattr(Gate, hook))


_HOLDING, _DUE, _EXPIRING, _TAKING, _ENTERING = (
    _overriding(hook) for hook in ("holds", "due", "expired", "takes", "enter"))


_parts_of: tuple[tuple[StepKind, ...], tuple[FlowsPart, ...]] = ((), ())


def flows_parts() -> tuple[FlowsPart, ...]:
    """Every plug-in's part of flows.yaml, the kinds' then the gates', in the registry's order.
    Asked a few times per submission: built again only when the kinds change (a test may add
    one to KINDS), the gates being fixed at import."""
    global _parts_of
    kinds = tuple(KINDS.values())
    if _parts_of[0] != kinds:
        _parts_of = (kinds, tuple(part for part in (*(kind.spec for kind in kinds), *(gate.spec for gate in GATES)) if part))
    return _parts_of[1]


def kind_declared_by(step_spec: Any) -> str:
    """The kind a validated flows.yaml step declares: the first kind whose declaring key it has,
    in the registry's order (`for_each`, then `flow`), else the kind no key declares (a command)."""
    for kind in KINDS.values():
        key = kind.spec.declared_by
        if key is not None and getattr(step_spec, key, None) is not None:
            return kind.name
    return next(kind.name for kind in KINDS.values() if kind.spec.declared_by is None)


def enter_gates(task: Task, asks: Mapping[str, Any], now: float) -> None:
    """In place, at the task's creation: each gate takes the submission's ask of it, then the
    first that has a wait to begin begins it. TypeError for an ask no gate takes."""
    unknown = sorted(set(asks) - {gate.asks for gate in GATES})
    if unknown:
        raise TypeError(f"no gate takes {', '.join(unknown)}")
    for gate in _ENTERING:  # Gate's own enter records nothing: its `starts` need not be worked out
        gate.enter(task, asks.get(gate.asks) if gate.asks else None, now, starts=earliest_due(task, now, now))
    open_after(task, None, now)


def open_after(task: Task, gate_name: str | None, now: float) -> None:
    """In place: the gate named `gate_name` let the task go (None: none was open yet); the next
    gates open in turn until one holds the task."""
    names = [gate.name for gate in GATES]
    for gate in GATES[names.index(gate_name) + 1 if gate_name is not None else 0:]:
        if gate.open(task, now):
            return


def release_unit(task: Task, unit: Unit, now: float) -> None:
    """In place: `unit` settled, or left before it ran: each gate takes back what it held."""
    for gate in GATES:
        gate.release(task, unit, now)


def end_task(task: Task, now: float) -> None:
    """In place, from the task's final change: what each kind, then each gate, owes for it."""
    for kind in KINDS.values():
        kind.on_task_end(task, now)
    for gate in GATES:
        gate.on_task_end(task, now)


def child_asks(body: dict[str, Any]) -> dict[str, Any]:
    """What a sub-flow's child asks of the gates, from its parent's start entry, by each gate's
    `asks` (create_task's keywords)."""
    return {gate.asks: ask for gate in GATES if gate.asks and (ask := gate.child_ask(body)) is not None}


def retry_gates(task: Task, now: float) -> None:
    """In place, from an operator's retry: each gate's part of the new generation."""
    for gate in GATES:
        gate.on_retry(task, now)


def move_doubts(task: Task, asks: Mapping[str, Any]) -> list[str]:
    """Why moving the task to a revision that asks `asks` of the gates (by each gate's `asks`) is
    in doubt: each gate's say of the ask it is given."""
    return [why for gate in GATES if gate.asks is not None and gate.asks in asks
            and (why := gate.move_doubt(task, asks[gate.asks])) is not None]


def plan_reads(task: Task) -> dict[str, list[str]]:
    """The keys of the gates' own tables a dry run's plan shows, by the gate whose folder keeps
    the table: each gate's, in the registry's order, each key once."""
    reads: dict[str, list[str]] = {}
    for gate in GATES:
        for table, keys in gate.plan_reads(task).items():
            known = reads.setdefault(table, [])
            known += [key for key in keys if key not in known]
    return reads


def start_entries(task: Task) -> set[str]:
    """The dispatch ids of the outbox entries that carry a not-started task's delayed start, as
    each gate says (a document written before `StartAt` was kept)."""
    return {entry for gate in GATES for entry in gate.start_entries(task)}


def gate_of_wait(kind: Any) -> Gate | None:
    """The gate whose wait a task's `WaitingFor` of this kind is."""
    return next((gate for gate in GATES if gate.wait_kind == kind), None)


def run_hold(task: Task, run: Run, now: float) -> WaitCondition | None:
    """What an unclaimed run waits for, if a gate keeps it from its claim now (the first gate's
    in the registry's order), else None."""
    return next((wait for gate in GATES if (wait := gate.holds_run(task, run, now)) is not None), None)


def held(task: Task) -> Hold:
    """The most any gate holds of the task's forward work."""
    most = Hold.NONE
    for gate in _HOLDING:
        hold = gate.holds(task)
        if hold is Hold.ALL:
            return hold
        most = max(most, hold)
    return most


def earliest_due(task: Task, now: float, base: float) -> float:
    """When a dispatch made now may be due: `base`, or later if a gate says so."""
    return max([base] + [due for gate in _DUE if (due := gate.due(task, now)) is not None])


def expiry(task: Task, now: float) -> str | None:
    """Why the task must roll back now, if a gate says it must."""
    return next((why for gate in _EXPIRING if (why := gate.expired(task, now)) is not None), None)


def taken(task: Task, run: Run, due_at: float) -> bool:
    """In place: the first gate that holds the new run takes it (it is not published)."""
    return any(gate.takes(task, run, due_at) for gate in _TAKING)
