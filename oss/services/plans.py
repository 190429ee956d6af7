"""A dry run's answer: what a task would do if it were submitted now, with no side effect.

`plan_of` is a pure function of the task as it would be inserted (`TaskService.draft`), the
current state of the lock keys it would ask for, and the modules that announced themselves. The
plan is what an operator checks before a risky operation: the graph with `for_each` counts and
sub-flows, the locks it would wait for and who holds them, the modules that would serve each
step and whether they are live, and when it would start.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel, Field

from common.engine.codes import WaitKind
from common.engine.document import ChildTemplate, KeyLock, KeyRate, LockHolder, Step, Task
from common.engine.views import (
    describe_budget,
    plan_waves,
    EXCLUSIVE,
    LockAsk,
    fits,
    lock_keys,
    parse_member,
    per_text,
    slots_left,
    start_phrases,
    utc_text,
)
from common.engine.registry import kind_of
from common.engine.states import TaskStatus
from common.secrets.documents import mask_parameters
from common.queues import module_queue
from common.store.side.modules import ModuleRegistration, is_live

class PlanLock(BaseModel):
    key: str
    limit: int
    scope: str = Field(description='"task" for the task type\'s lock, or the name of the step whose units take it')
    mode: str = Field(EXCLUSIVE, description="The mode it would ask in: exclusive, or one of flows.yaml's lock_modes")
    holders: list[str] = Field(description="Tasks holding the key now")
    waiting: int = Field(description="Tasks already in line for the key")
    free: bool = Field(description="A new asker would get the key at once: a free slot, in a mode every holder "
                                   "shares the key with, and nobody in line")


class PlanRate(BaseModel):
    key: str
    limit: int
    per_seconds: float
    slots_left: int | None = Field(description="Start slots free now in the window of `per_seconds` "
                                   "(docs/guide/rate-limits.md); null for a token limited to namespaces while "
                                   "some are free: the count is of every namespace's starts")
    next_slot_at: float | None = Field(None, description="None free: when the next one frees (epoch seconds)")


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


class Plan(BaseModel):
    task_type: str
    existing_task_id: str | None = Field(None, description="The idempotency key names this task: nothing new would be created")
    parameters: dict[str, Any] = Field(description="As the task would get them: defaults filled, secrets masked")
    start: PlanStart
    steps: list[PlanStep]
    locks: list[PlanLock]
    rate: PlanRate | None = Field(None, description="Its task type's rate: the start slots left now")
    modules: list[PlanModule]
    warnings: list[str] = Field(description="What would make the task wait or fail if it ran now")


PlanStep.model_rebuild()


def plan_of(
    task: Task,
    *,
    existing: bool,
    awaited: Task | None,
    locks: Mapping[str, KeyLock | None],
    registrations: list[ModuleRegistration],
    now: float,
    module_ttl: float,
    drained: Collection[str] = frozenset(),
    rate: KeyRate | None = None,
) -> Plan:
    """The plan of `task` (not stored). `locks`: the current state of every key `lock_keys(task)`
    names (None: nobody holds or waits for it). `drained`: the modules drained now. `rate`: the
    rate table's document of the key its rate would take a slot of (None: no start recorded)."""
    live = [r for r in registrations if is_live(r, now, module_ttl)]
    steps = [_step(task, i, s, task.Steps, live) for i, s in enumerate(task.Steps)]
    plan_locks = [_lock(ask, scope, locks.get(ask.key)) for ask, scope in lock_keys(task)]
    modules = [m.model_copy(update={"drained": m.module in drained}) for m in _modules(task.Steps, registrations, live)]
    plan_rate = _rate(task, rate, now)
    start = _start(task, awaited, plan_locks, plan_rate, now)
    warnings = [f"module {m.module} has no live worker: its steps would wait in {m.queue}" for m in modules if not m.live]
    warnings += [f"module {m.module} serves no {c!r} now" for m in modules if m.live for c in m.missing]
    warnings += [f"module {m.module} is drained: its steps would wait until it is undrained" for m in modules
                 if m.drained]  # fmt: skip
    warnings += [f"step lock {lock.key} is busy: {', '.join(lock.holders)} holds it" for lock in plan_locks
                 if lock.scope != "task" and not lock.free]  # fmt: skip
    return Plan(
        task_type=task.TaskType,
        existing_task_id=task.TaskId if existing else None,
        parameters=mask_parameters(task.Parameters, task.SecretParameters),
        start=start, steps=steps, locks=plan_locks, rate=plan_rate, modules=modules, warnings=warnings,
    )  # fmt: skip


def plan_of_read(task: Task, read: Mapping[str, Mapping[str, Any]], **rest: Any) -> Plan:
    """`plan_of`, given what a dry run read of the gates' own tables (by gate, each key it would
    ask for and its document: common.engine.registry.plan_reads)."""
    rate = next(iter(read.get("rate", {}).values()), None)
    return plan_of(task, locks=read.get("lock", {}), rate=rate, **rest)


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


def _lock(ask: LockAsk, scope: str, lock: KeyLock | None) -> PlanLock:
    # A step lock's holder is a unit ("<task>#<cursor>[.<item>]"): the plan names its task.
    holders = sorted({parse_member(h.TaskId)[0] for h in lock.Holders}) if lock is not None else []
    waiting = len(lock.Waiters) if lock is not None else 0
    asker = LockHolder(TaskId="plan", Since=0.0, Mode=ask.mode, Shares=list(ask.shares))
    return PlanLock(key=ask.key, limit=ask.limit, mode=ask.mode, scope=scope, holders=holders, waiting=waiting,
                    free=waiting == 0 and fits(lock.Holders if lock is not None else [], ask.limit, asker))  # fmt: skip


def _rate(task: Task, rate: KeyRate | None, now: float) -> PlanRate | None:
    if task.Rate is None:
        return None
    left, next_at = slots_left(rate, task.Rate.Limit, task.Rate.Per, now)
    return PlanRate(key=task.Rate.Key, limit=task.Rate.Limit, per_seconds=task.Rate.Per, slots_left=left,
                    next_slot_at=next_at)


def _start(task: Task, awaited: Task | None, locks: list[PlanLock], rate: PlanRate | None, now: float) -> PlanStart:
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
    task_lock = next((lock for lock in locks if lock.scope == "task"), None)
    if task_lock is not None and not task_lock.free:
        when = "lock" if when == "now" else when
        held = f"held by {', '.join(task_lock.holders)}" if task_lock.holders else "not held"
        reasons.append(f"once lock {task_lock.key} is free ({held}; {task_lock.waiting} in line)")
    if rate is not None and rate.next_slot_at is not None:
        when = "rate" if when == "now" else when
        reasons.append(f"once a start slot of rate {rate.key} frees at {utc_text(rate.next_slot_at)} "
                       f"({rate.limit} per {per_text(rate.per_seconds)}, none left now)")
    return PlanStart(when=when, text=START_PHRASES[when], at=task.StartAt, reasons=reasons)
