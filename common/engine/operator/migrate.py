"""Moving a task in flight to the revision of its type that flows.yaml holds now
(docs/design/operator-actions.md), as a pure change in the style of the other operator actions.

Only where nothing is in doubt: runs, messages in flight, fencing tokens, the history and the
rollback all name steps by their index, so every step the task has touched must stay where it
is and mean what it meant. The steps not touched yet take the new revision's shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from common.engine.core.advance import advance
from common.engine.document import Step, Task
from common.engine.operator.actions import check_reason
from common.engine.registry import move_doubts
from common.engine.states import StepState, TaskStatus
from common.engine.core.units import IdFactory, Refusal, Timing, new_id, record
from common.engine.core.step_doc import step_definition


@dataclass(frozen=True)
class Revision:
    """The revision a task moves to, as the running flows.yaml builds it for this task: its
    step templates, its labels, the task's submitted parameters checked against its schema
    (defaults filled in) and the task lock it would ask for them (create_task's `lock`)."""

    steps: list[Step]
    content_hash: str
    version: str | None
    parameters: dict[str, Any]
    lock: Any

    @property
    def asks(self) -> dict[str, Any]:
        """What it asks of the gates, by each gate's `asks` (create_task's keywords)."""
        return {"lock": self.lock}


def migrate(task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id, *,
            revision: Revision) -> Task | Refusal:  # fmt: skip
    """The task on `revision`, or a Refusal naming everything in doubt."""
    check_reason(reason)
    if task.FlowHash == revision.content_hash:
        return Refusal(f"runs {revision.content_hash} already")
    doubts = doubts_about(task, revision)
    if doubts:
        return Refusal("; ".join(doubts))
    new = task.clone()
    templates = _as_graph(revision.steps)
    new.Steps = [new.Steps[i] if i < len(new.Steps) and touched(new, i) else templates[i] for i in range(len(templates))]
    for name, value in revision.parameters.items():  # a new parameter's default; outputs stay
        new.Parameters.setdefault(name, value)
    before = task.FlowVersion or task.FlowHash or "an unrecorded revision"
    new.FlowHash, new.FlowVersion = revision.content_hash, revision.version
    record(new, timing.now, "migrated", actor=actor,
           message=f"{before} -> {revision.version or revision.content_hash}: {reason}")  # fmt: skip
    advance(new, timing, actor, ids)  # a step the new graph makes ready starts now
    return new


def doubts_about(task: Task, revision: Revision) -> list[str]:
    """Why the task cannot move to `revision` without doubt (empty: it can)."""
    if task.TaskStatus not in (TaskStatus.NOT_STARTED, TaskStatus.RUNNING):
        return [f"task is {task.TaskStatus.name}: only a task going forward moves"]
    if task.CancelRequested is not None:
        return [f"cancel requested by {task.CancelRequested.Actor}"]
    doubts: list[str] = []
    templates = _as_graph(revision.steps)
    for index, step in enumerate(task.Steps):
        if not touched(task, index):
            continue
        there = templates[index] if index < len(templates) else None
        if there is None or there.Name != step.Name:
            moved = next((i for i, t in enumerate(templates) if t.Name == step.Name), None)
            where = "is not in the new revision" if moved is None else f"moves from index {index} to {moved}"
            doubts.append(f"step {step.Name} has started and {where}")
            continue
        changed = _changed_fields(step, there)
        if changed:
            doubts.append(f"step {step.Name} has started and its definition changed ({', '.join(changed)})")
    return doubts + move_doubts(task, revision.asks)


def touched(task: Task, index: int) -> bool:
    """Whether step `index` has begun to exist in the world: anything but a step still waiting
    with no run, no attempt, no step lock and no items fixed."""
    step = task.Steps[index]
    return (
        step.State is not StepState.WAITING
        or step.Attempts > 0
        or step.RollbackAttempts > 0
        or step.Items is not None
        or step.ItemStore is not None
        or step.ChildTaskId is not None
        or any(run.Cursor == index for run in task.Runs)
        or any(lock.Cursor == index for lock in task.UnitLocks)
    )


def _as_graph(templates: list[Step]) -> list[Step]:
    """The templates as a task holds them: a step without `After` waits for the one before."""
    return [t if t.After is not None else t.model_copy(update={"After": [i - 1] if i else []})
            for i, t in enumerate(templates)]  # fmt: skip


def _changed_fields(step: Step, template: Step) -> list[str]:
    mine, theirs = step_definition(step), step_definition(template)
    return sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))

