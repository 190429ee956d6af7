"""Every state machine's table of legal changes (common/engine/states.py) against the code.

A random walk drives one task through the engine's real pure changes (claims, outcomes, lock
grants, the awaited task's end, expiries and every operator action) in any order; the one
checker raises on a change outside a table, and the walk also compares each document with the
one before and finds each run's, lock's and wait's change in its table. A scan of the source
shows every write of those fields goes through the checker, so no change escapes the walk."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.engine.document import LockTemplate, StepMessage, Task
from common.engine.gates.lock.changes import lock_granted
from common.engine.gates.lock.unit_locks import unit_lock_granted
from common.engine.gates.after_task.changes import awaited_finished
from common.engine.operator.actions import cancel, compensate, retry, retry_rollback
from common.engine.operator.flow import pause, resume
from common.engine.states import (
    LOCK_TRANSITIONS,
    MACHINES,
    RUN_TRANSITIONS,
    UNIT_LOCK_TRANSITIONS,
    WAIT_TRANSITIONS,
    RunState,
    TaskStatus,
)
from common.engine.core.entries import AttemptResult, Refusal, Timing, claim, create_task, expire, finish_attempt
from common.engine.states import ResultCode
from tests.support.builders import counter_ids, make_step

ROOT = Path(__file__).resolve().parents[2]
OK, FAIL = AttemptResult(ResultCode.OK), AttemptResult(ResultCode.FAILED, "boom")
ACTIONS = ["claim", "ok", "fail", "grant", "grant_unit", "awaited_ok", "awaited_failed", "expire",
           "cancel", "retry", "retry_rollback", "compensate", "pause", "resume"]


def new_task(after: bool, lock: bool, step_lock: bool, ids) -> Task:
    steps = [make_step("a"), make_step("b"), make_step("c")]
    steps[1].After, steps[2].After = [0], [0]
    if step_lock:
        steps[1].Lock = LockTemplate(Key="host:1", Limit=1)
    return create_task(task_type="t", steps=steps, parameters={}, timing=Timing(100.0), ids=ids,
                       after_task="other" if after else None, lock=("db:1", 1) if lock else None)


def act(task: Task, action: str, pick: int, timing: Timing, ids) -> Task | Refusal:
    pending = [r for r in task.Runs if r.State is RunState.PENDING]
    running = [r for r in task.Runs if r.State is RunState.RUNNING]
    if action == "claim" and pending:
        run = pending[pick % len(pending)]
        entry = next((e for e in task.Outbox if e.DispatchId == run.DispatchId), None)
        if entry is None:
            return Refusal("not published")
        return claim(task, StepMessage.model_validate(entry.Body), "w", timing)
    if action in ("ok", "fail") and running:
        run = running[pick % len(running)]
        return finish_attempt(task, run.DispatchId, "w", OK if action == "ok" else FAIL, timing, ids=ids)
    if action == "grant":
        return lock_granted(task, "db:1", timing, ids)
    if action == "grant_unit" and task.UnitLocks:
        held = task.UnitLocks[pick % len(task.UnitLocks)]
        return unit_lock_granted(task, (held.Cursor, held.Item), held.Key, timing)
    if action.startswith("awaited_"):
        status = TaskStatus.SUCCESS if action == "awaited_ok" else TaskStatus.ROLLED_BACK
        return awaited_finished(task, "other", status, timing, ids)
    if action == "expire":
        return expire(task, Timing(timing.now + 1000.0), ids=ids)
    operator = {"cancel": cancel, "retry": retry, "retry_rollback": retry_rollback, "compensate": compensate,
                "pause": pause, "resume": resume}.get(action)
    return operator(task, "olga", "walk", timing, ids) if operator else Refusal("nothing to do")


def changes(before: Task, after: Task) -> list[tuple[frozenset, object, object]]:
    """Each run's, lock's and wait's (old, new) between two documents of the same task."""
    found = []
    old_runs = {r.DispatchId: r.State for r in before.Runs}
    found += [(RUN_TRANSITIONS, old_runs[r.DispatchId], r.State) for r in after.Runs if r.DispatchId in old_runs]
    state = lambda lock: None if lock is None else lock.State  # noqa: E731
    found.append((LOCK_TRANSITIONS, state(before.Lock), state(after.Lock)))
    old_units = {(u.Cursor, u.Item): u.State for u in before.UnitLocks}
    new_units = {(u.Cursor, u.Item): u.State for u in after.UnitLocks}
    found += [(UNIT_LOCK_TRANSITIONS, old_units.get(u), new_units.get(u)) for u in old_units.keys() | new_units.keys()]
    kind = lambda t: None if t.WaitingFor is None else t.WaitingFor.Kind  # noqa: E731
    found.append((WAIT_TRANSITIONS, kind(before), kind(after)))
    return [(table, old, new) for table, old, new in found if old != new]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(after=st.booleans(), lock=st.booleans(), step_lock=st.booleans(),
       walk=st.lists(st.tuples(st.sampled_from(ACTIONS), st.integers(0, 5)), max_size=40))
def test_every_change_a_walk_makes_is_in_its_table(after, lock, step_lock, walk):
    ids = counter_ids("s")
    task, now = new_task(after, lock, step_lock, ids), 100.0
    for action, pick in walk:
        now += 1.0
        changed = act(task, action, pick, Timing(now), ids)  # IllegalTransition fails the test
        if isinstance(changed, Refusal):
            continue
        for table, old, new in changes(task, changed):
            assert (old, new) in table, f"{action}: {old} -> {new}"
        task = changed


WRITTEN = {"State", "WaitingFor", "Lock", "UnitLocks", "TaskStatus"}
CHECKERS = {"check_transition", "check_step_transition", "check_task_transition", "move_run", "move_lock",
            "set_waiting", "set_status", "set_unit_state"}
# Writes that are no change of state: a step's summary of its items (derived, in set_unit_state
# after its check), a view of a task's item records that is never written back, and the take-back
# of an item's start nobody saw (its record as it was before the start, its event dropped too).
DERIVED = {("common/engine/core/units.py", "set_unit_state"), ("common/engine/kinds/for_each/records.py", "inline_view"),
           ("common/engine/kinds/for_each/item_changes.py", "withdraw_unpublished")}


def unchecked_writes(sources: dict[str, str]) -> list[str]:
    """Functions that write a state field and call no checker."""
    unchecked = []
    for name, text in sorted(sources.items()):
        for function in ast.walk(ast.parse(text)):
            if not isinstance(function, ast.FunctionDef) or (name, function.name) in DERIVED:
                continue
            writes = [t for node in ast.walk(function) if isinstance(node, ast.Assign) for t in node.targets
                      for t in (t.elts if isinstance(t, ast.Tuple) else [t])
                      if isinstance(t, ast.Attribute) and t.attr in WRITTEN and not _is_self(t)]
            calls = {c.func.id if isinstance(c.func, ast.Name) else getattr(c.func, "attr", "")
                     for c in ast.walk(function) if isinstance(c, ast.Call)}
            if writes and not calls & CHECKERS and name != "common/engine/states.py":
                unchecked.append(f"{name}:{function.lineno} {function.name}")
    return unchecked


def test_every_write_of_a_state_goes_through_the_checker():
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / "common").rglob("*.py")}
    assert unchecked_writes(sources) == []
    planted = "def sneak(task, run):\n    run.State, run.Owner = 'running', 'w'\n"
    assert unchecked_writes({"common/engine/planted.py": planted}) == ["common/engine/planted.py:1 sneak"]


def _is_self(target: ast.Attribute) -> bool:
    return isinstance(target.value, ast.Name) and target.value.id in ("self", "cls")


def test_every_machine_is_checked_by_the_one_checker():
    assert {m.name for m in MACHINES} == {"task status", "step state", "run state", "lock state",
                                          "step lock state", "wait", "rate state"}
