"""What the fleet module's side effects must show, checked against the final task documents.

The ledger (tests/chaos/fleet_commands.py) is what the commands did, written by the module's own
processes as their effect; the History is what the store committed. A pure function of the two
(no I/O), unit-tested on hand-made documents (tests/chaos/test_ledger_checks.py), so it can fail.

Per unit (a step, or one item of a for_each step), for every task of the run:

SUCCESS          the unit's normal outcome committed exactly once, its effect made (at least one
                 `apply` line), nothing undone (no `undo` line, no rollback committed); but an
                 item failed within its step's budget (`ToleratedItems`): never committed
                 forward, its rollback committed exactly once and its `undo` made (its debris),
                 after its last `apply`.
ROLLED_BACK      every unit whose normal outcome was committed, or whose effect was made (an
                 attempt killed after its effect counts: the world changed), had its rollback
                 committed exactly once and its `undo` made, after its last `apply`; a unit never
                 claimed forward was neither applied nor undone (only the applied are undone).
any              no outcome committed twice; no effect of a unit the store never claimed; every
                 `apply` (and every `undo`) of a unit under one idempotency key, where the lines
                 name it (the module keeps an effect once per key: made once); after a redrive
                 (`redriven`), no `apply` of a unit whose outcome was committed before it.
ROLLBACK_FAILED  never expected here (the rollbacks retry far beyond what the kills cost): a
                 violation.

Counted (commands run at least once, by design): units applied and undone, and the extra runs
(`apply`/`undo` lines beyond the first of a unit: an attempt that made its effect and then lost
its module before the commit).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from common.engine.document import Task
from common.engine.core.units import units
from common.engine.states import Phase, TaskStatus

Unit = tuple[int, int | None]  # (cursor, item): item None for a plain step


@dataclass
class LedgerReport:
    units: int = 0
    applied: int = 0  # units with their effect made
    undone: int = 0  # units with their undo made
    extra_applies: int = 0
    extra_undos: int = 0
    violations: list[str] = field(default_factory=list)

    def summary(self, limit: int = 20) -> str:
        lines = [f"{len(self.violations)} ledger violation(s) over {self.units} unit(s):"]
        lines += [f"  {v}" for v in self.violations[:limit]]
        if len(self.violations) > limit:
            lines.append(f"  ... and {len(self.violations) - limit} more")
        return "\n".join(lines)


def check_ledger(tasks: Iterable[Task], ledger: Iterable[dict]) -> LedgerReport:
    """`tasks`: the run's tasks with their items inline (tests.support.item_view.with_items).
    `ledger`: the lines of the fleet module's ledger (tests.support.ledger_file.read_ledger)."""
    lines: dict[str, dict[Unit, dict]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for line in ledger:
        unit = lines[line["task"]][(line["cursor"], line["item"])]
        unit[line["op"]].append(line["time"])
        if line.get("key") is not None:
            unit.setdefault("keys", {}).setdefault(line["op"], set()).add(line["key"])
    report = LedgerReport()
    for task in tasks:
        _check_task(task, lines.get(task.TaskId, {}), report)
    return report


def _check_task(task: Task, effects: dict[Unit, dict], report: LedgerReport) -> None:
    def violation(unit: Unit, detail: str) -> None:
        name = f"step {unit[0]}" if unit[1] is None else f"step {unit[0]} item {unit[1]}"
        report.violations.append(f"task {task.TaskId} ({task.TaskStatus.name}) {name}: {detail}")

    committed: Counter[Unit] = Counter()
    undone: Counter[Unit] = Counter()
    claimed: set[Unit] = set()
    succeeded_at: dict[Unit, float] = {}
    redrives = [event.Time for event in task.History if event.Event == "redriven"]
    tolerated = {(cursor, item) for cursor, step in enumerate(task.Steps) for item in step.ToleratedItems or []}
    for event in task.History:
        unit = (event.Cursor, event.Item)
        if event.Event == "step_succeeded":
            committed[unit] += 1
            succeeded_at.setdefault(unit, event.Time)
        elif event.Event == "rollback_succeeded":
            undone[unit] += 1
        elif event.Event == "claimed" and event.Phase is Phase.NORMAL:
            claimed.add(unit)
    known = {(cursor, item) for cursor, step in enumerate(task.Steps) for item, _ in units(step)}
    for unit in sorted(set(effects) - known, key=str):
        violation(unit, "effects of a unit the task does not have")
    if task.TaskStatus is TaskStatus.ROLLBACK_FAILED:
        report.violations.append(f"task {task.TaskId}: ended ROLLBACK_FAILED")
    for unit in sorted(known, key=lambda u: (u[0], -1 if u[1] is None else u[1])):
        report.units += 1
        applies, undos = effects.get(unit, {}).get("apply", []), effects.get(unit, {}).get("undo", [])
        report.applied += bool(applies)
        report.undone += bool(undos)
        report.extra_applies += max(0, len(applies) - 1)
        report.extra_undos += max(0, len(undos) - 1)
        if committed[unit] > 1:
            violation(unit, f"normal outcome committed {committed[unit]} times")
        if undone[unit] > 1:
            violation(unit, f"rollback committed {undone[unit]} times")
        if (applies or undos) and unit not in claimed:
            violation(unit, f"{len(applies)} apply and {len(undos)} undo effect(s), never claimed")
        for op, keys in effects.get(unit, {}).get("keys", {}).items():
            if len(keys) > 1:
                violation(unit, f"{op} made under {len(keys)} idempotency keys: {sorted(keys)}")
        if applies and unit in succeeded_at and any(succeeded_at[unit] < at < max(applies) for at in redrives):
            violation(unit, "applied again after a redrive, its outcome committed before it")
        if task.TaskStatus is TaskStatus.SUCCESS and unit in tolerated:
            if committed[unit] or undone[unit] != 1 or not undos:
                violation(unit, f"tolerated with the outcome committed {committed[unit]} times, rollback "
                                f"committed {undone[unit]} times, {len(undos)} undo effect(s)")
            elif applies and max(undos) < max(applies):
                violation(unit, "an apply effect made after its last undo: left applied")
        elif task.TaskStatus is TaskStatus.SUCCESS:
            if committed[unit] != 1 or not applies:
                violation(unit, f"SUCCESS with the outcome committed {committed[unit]} times, {len(applies)} effect(s)")
            if undos or undone[unit]:
                violation(unit, f"SUCCESS but undone ({len(undos)} undo effect(s), {undone[unit]} committed)")
        elif task.TaskStatus is TaskStatus.ROLLED_BACK:
            if committed[unit] or applies:
                if undone[unit] != 1 or not undos:
                    violation(unit, f"applied (committed {committed[unit]}, {len(applies)} effect(s)) but rollback "
                                    f"committed {undone[unit]} times, {len(undos)} undo effect(s)")
                elif applies and max(undos) < max(applies):
                    violation(unit, "an apply effect made after its last undo: left applied")
            if unit not in claimed and (undos or undone[unit]):
                violation(unit, "never claimed forward, yet rolled back")
