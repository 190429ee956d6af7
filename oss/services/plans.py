"""A dry run's answer: what a task would do if it were submitted now, with no side effect.

`plan_of` is a pure function of the task as it would be inserted (`TaskService.draft`), what a
dry run read of the gates' own tables, and the modules that announced themselves. The plan is
what an operator checks before a risky operation: the graph with `for_each` counts and
sub-flows, each gate's part (the locks it would wait for and who holds them, its rate's start
slots: common.engine.core.plan_parts), the modules that would serve each step and whether they
are live, and when it would start.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel, Field, create_model

from common.engine.codes import WaitKind
from common.engine.document import ChildTemplate, Step, Task
from common.engine.views import (
    PlanPart, describe_budget, per_text, plan_fields, plan_parts, plan_waves, start_phrases, utc_text,
)
from common.engine.registry import kind_of
from common.engine.states import TaskStatus
from common.secrets.documents import mask_parameters
from common.queues import module_queue
from common.store.side.modules import ModuleRegistration, is_live

class PlanCommand(BaseModel):
    module: str
    command: str
    kind: str | None = Field(None, description="process, thread or async, as its live module announced it")


class PlanForEach(BaseModel):
    parameter: str | None = Field(None, description="The list parameter it fans out over; None: a source gives its items")
    items: int | None = Field(description="How many items; None when the list comes from an earlier step's output, "
                              "or from a source (its count is unknown until it runs)")
    source: str | None = Field(None, description='Where its items come from, a page at a time: "module.command"')
    max_parallel: int | None
    tolerate: str | None = Field(None, description='Its failure budget ("3 items", "1% of items"); None: none')
    on_failure: str = Field("rollback", description="What a failure past the budget does: rollback or hold")
    waves: list[str] | None = Field(None, description="Its waves in order, each with its size and the gate after "
                                    "it; None: no waves")


class PlanStep(BaseModel):
    index: int
    name: str
    after: list[str] = Field(description="The steps it waits for")
    starts_first: bool = Field(False, description="Dispatched as soon as the task starts")
    normal: PlanCommand | None = Field(None, description="None for a sub-flow step")
    rollback: PlanCommand | None = Field(None, description="None: nothing to undo")
    timeout_seconds: float | None = None
    retries: int = 0
    for_each: PlanForEach | None = None
    sub_flow: PlanSubFlow | None = None
    lock_key: str | None = Field(None, description="The step lock each unit takes, as a template")
    rate: str | None = Field(None, description='The rate each attempt takes a start slot of, as a template: '
                                               '"cloud-api:{host}: 5 per 1s"')
    kind: str = Field("command", description="command, for_each, sub_flow, approve, or a kind added later")
    note: str = Field("", description="What it does, as its kind says (an approval step: how many approve, which roles)")


class PlanSubFlow(BaseModel):
    task_type: str
    inputs: dict[str, str] = Field(description="Child parameter <- parent parameter")
    steps: list[PlanStep]


class PlanModule(BaseModel):
    module: str
    queue: str
    live: bool = Field(description="At least one worker renewed its heartbeat in time")
    needed: list[str] = Field(description="The commands this task would send it")
    missing: list[str] = Field(description="Needed commands no live worker serves")
    drained: bool = Field(False, description="Drained for a deploy: its steps would wait until it is undrained")


# A start nothing holds, one that never comes, and each gate's (its shown.py's PLAN_START).
START_PHRASES = {"now": "now", "never": "never", **start_phrases()}


class PlanStart(BaseModel):
    when: str = Field(description=f"{', '.join(START_PHRASES)}: what holds the start first (now: nothing)")
    text: str = Field("", description='How it reads, as what holds it says it: "once its lock is free"')
    at: float | None = Field(None, description="The delayed start (epoch seconds), when one was asked")
    reasons: list[str] = Field(description="Everything that holds the start, in the order it applies")


class _PlanHead(BaseModel):
    task_type: str
    existing_task_id: str | None = Field(None, description="The idempotency key names this task: nothing new would be created")
    parameters: dict[str, Any] = Field(description="As the task would get them: defaults filled, secrets masked")
    start: PlanStart
    steps: list[PlanStep]


# Each gate's fields (its folder's plan.py: `locks`, `rate`), between the steps and the modules.
_PlanGates: type[BaseModel] = create_model("_PlanGates", **plan_fields())  # type: ignore[call-overload]


class _PlanTail(BaseModel):
    modules: list[PlanModule]
    warnings: list[str] = Field(description="What would make the task wait or fail if it ran now")


# The fields in the order the answer has them: a pydantic model's fields are its bases' from the
# last base to the first. (No docstring: it would be the schema's description.)
class Plan(_PlanTail, _PlanGates, _PlanHead):  # type: ignore[misc,valid-type]
    pass


PlanStep.model_rebuild()


def plan_of(
    task: Task,
    *,
    existing: bool,
    awaited: Task | None,
    registrations: list[ModuleRegistration],
    now: float,
    module_ttl: float,
    drained: Collection[str] = frozenset(),
    read: Mapping[str, Mapping[str, Any]] | None = None,
) -> Plan:
    """The plan of `task` (not stored). `drained`: the modules drained now. `read`: what a dry
    run read of the gates' own tables (by table, each key `plan_reads(task)` names and its
    document; a key missing or None: nothing recorded of it)."""
    live = [r for r in registrations if is_live(r, now, module_ttl)]
    steps = [_step(task, i, s, task.Steps, live) for i, s in enumerate(task.Steps)]
    parts = plan_parts(task, read or {}, now)
    modules = [m.model_copy(update={"drained": m.module in drained}) for m in _modules(task.Steps, registrations, live)]
    start = _start(task, awaited, parts, now)
    warnings = [f"module {m.module} has no live worker: its steps would wait in {m.queue}" for m in modules if not m.live]
    warnings += [f"module {m.module} serves no {c!r} now" for m in modules if m.live for c in m.missing]
    warnings += [f"module {m.module} is drained: its steps would wait until it is undrained" for m in modules
                 if m.drained]  # fmt: skip
    warnings += [warning for part in parts for warning in part.warnings]
    return Plan(
        task_type=task.TaskType,
        existing_task_id=task.TaskId if existing else None,
        parameters=mask_parameters(task.Parameters, task.SecretParameters),
        start=start, steps=steps, modules=modules, warnings=warnings,
        **{name: value for part in parts for name, value in part.fields.items()},
    )  # fmt: skip


def _step(task: Task, index: int, step: Step, steps: list[Step], live: list[ModuleRegistration]) -> PlanStep:
    # A template's step without a graph follows the one before it, as create_task makes it.
    after = step.After if step.After is not None else ([index - 1] if index else [])
    count = None
    if step.ForEach is not None:
        values = task.Parameters.get(step.ForEach)
        count = len(values) if isinstance(values, list) else None
    return PlanStep(
        index=index, name=step.Name, after=[steps[a].Name for a in after], starts_first=not after,
        normal=_command(step.NormalModule, step.NormalCommand, live),
        rollback=_command(step.RollbackModule, step.RollbackCommand, live),
        timeout_seconds=step.NormalTimeout if step.NormalModule else None, retries=step.NormalRetry,
        for_each=PlanForEach(parameter=step.ForEach, items=count, max_parallel=step.MaxParallel,
                             tolerate=describe_budget(step.Tolerate) or None,
                             on_failure=step.OnFailure or "rollback",
                             waves=plan_waves(step.Waves, count) if step.Waves else None,
                             source=f"{step.Source.Module}.{step.Source.Command}" if step.Source else None)
        if step.ForEach or step.Source else None,
        sub_flow=_sub_flow(task, step.FlowTemplate, step.FlowInputs, live) if step.FlowTemplate else None,
        lock_key=step.Lock.Key if step.Lock else None,
        rate=f"{step.Rate.Key}: {step.Rate.Limit} per {per_text(step.Rate.Per)}" if step.Rate else None,
        kind=kind_of(step).name, note=kind_of(step).describe(step).note,
    )  # fmt: skip


def _sub_flow(task: Task, template: ChildTemplate, inputs: dict[str, str], live: list[ModuleRegistration]) -> PlanSubFlow:
    children = [_step(task, i, s, template.Steps, live) for i, s in enumerate(template.Steps)]
    return PlanSubFlow(task_type=template.TaskType, inputs=dict(inputs), steps=children)


def _command(module: str | None, command: str | None, live: list[ModuleRegistration]) -> PlanCommand | None:
    if module is None or command is None:
        return None
    kind = next((r.Kinds[command] for r in live if r.Module == module and command in r.Kinds), None)
    return PlanCommand(module=module, command=command, kind=kind)


def _commands(steps: list[Step]) -> dict[str, set[str]]:
    """module -> the commands the steps (and their sub-flows' steps) would send it."""
    needed: dict[str, set[str]] = {}
    for step in steps:
        for module, command in ((step.NormalModule, step.NormalCommand), (step.RollbackModule, step.RollbackCommand)):
            if module is not None and command is not None:
                needed.setdefault(module, set()).add(command)
        if step.FlowTemplate is not None:
            for module, commands in _commands(step.FlowTemplate.Steps).items():
                needed.setdefault(module, set()).update(commands)
    return needed


def _modules(steps: list[Step], registrations: list[ModuleRegistration], live: list[ModuleRegistration]) -> list[PlanModule]:
    shown = []
    for module, commands in sorted(_commands(steps).items()):
        served = {c for r in live if r.Module == module for c in r.Commands}
        alive = any(r.Module == module for r in live)
        shown.append(PlanModule(module=module, queue=module_queue(module), live=alive, needed=sorted(commands),
                                missing=sorted(commands - served) if alive else sorted(commands)))  # fmt: skip
    return shown


def _start(task: Task, awaited: Task | None, parts: list[PlanPart], now: float) -> PlanStart:
    reasons: list[str] = []
    when: str = "now"
    wait = task.WaitingFor
    if wait is not None and wait.Kind is WaitKind.FREEZE and wait.Until is not None:  # it comes first
        when = "freeze"
        reasons.append(f"once freeze window {wait.Key} ends at {utc_text(wait.Until)}")
    if awaited is not None and awaited.TaskStatus is not TaskStatus.SUCCESS:
        if awaited.TaskStatus in (TaskStatus.ROLLED_BACK, TaskStatus.ROLLBACK_FAILED):
            return PlanStart(when="never", text=START_PHRASES["never"], at=task.StartAt,
                             reasons=[f"task {awaited.TaskId} it would wait for ended {awaited.TaskStatus.name.lower()}"])  # fmt: skip
        when = "after_task" if when == "now" else when
        reasons.append(f"after task {awaited.TaskId} succeeds (now {awaited.TaskStatus.name.lower()})")
    if task.StartAt is not None and task.StartAt > now:
        when = "at" if when == "now" else when
        reasons.append("at its start time")
    for part in parts:  # a gate's own table's (its lock, its rate's slots), in the registry's order
        if part.holds is not None:
            when = part.holds[0] if when == "now" else when
            reasons.append(part.holds[1])
    return PlanStart(when=when, text=START_PHRASES[when], at=task.StartAt, reasons=reasons)
