"""The lock gates' part of a dry run's plan (common.engine.core.plan_parts): the keys a task would
ask for that its submission can name, and their state as the plan shows it (`locks`): who holds
each, how many wait, whether a new asker would get it at once. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from common.engine.core.key_templates import LockKeyError, render_key
from common.engine.core.unit_parameters import unit_secrets
from common.engine.document import Task
from common.engine.gates.gate import PlanPart
from common.engine.gates.lock.table import KeyLock, LockHolder
from common.engine.gates.lock.modes import EXCLUSIVE, fits
from common.engine.gates.lock.shown import PLAN_START
from common.engine.gates.lock.task_lock import LockAsk, ask_for, asked
from common.engine.gates.lock.unit_locks import parse_member

# A for_each step's step lock is shown for this many items; the rest are counted.
SHOWN_ITEM_KEYS = 20


def lock_keys(task: Task) -> list[tuple[LockAsk, str]]:
    """(what it asks, scope) of every lock the task would ask for that the submission can name:
    the task type's, and each step lock whose key its parameters (and items) render."""
    keys: list[tuple[LockAsk, str]] = []
    if task.Lock is not None:
        keys.append((asked(task.Lock), "task"))
    for step in task.Steps:
        if step.Lock is None:
            continue
        secret = unit_secrets(task.SecretParameters, step.ForEach)
        values = task.Parameters.get(step.ForEach) if step.ForEach else None
        units = [{**task.Parameters, "item": v, "item_index": i} for i, v in enumerate(values[:SHOWN_ITEM_KEYS])] \
            if isinstance(values, list) else [task.Parameters]  # fmt: skip
        for parameters in units:
            try:
                key = render_key(step.Lock.Key, parameters, secret)
            except LockKeyError:
                continue  # keyed by an output of an earlier step: known only when it runs
            if (ask_for(step.Lock, key), step.Name) not in keys:
                keys.append((ask_for(step.Lock, key), step.Name))
    return keys


class PlanLock(BaseModel):
    key: str
    limit: int
    scope: str = Field(description='"task" for the task type\'s lock, or the name of the step whose units take it')
    mode: str = Field(EXCLUSIVE, description="The mode it would ask in: exclusive, or one of flows.yaml's lock_modes")
    holders: list[str] = Field(description="Tasks holding the key now")
    waiting: int = Field(description="Tasks already in line for the key")
    free: bool = Field(description="A new asker would get the key at once: a free slot, in a mode every holder "
                                   "shares the key with, and nobody in line")


PLAN_FIELDS = {"locks": (list[PlanLock], ...)}


def plan_part(task: Task, read: Mapping[str, Mapping[str, Any]], now: float) -> PlanPart:
    """Every lock of `lock_keys` with its state (`read["lock"]`: the lock table's document of
    each key, None for a key nobody holds or waits for); the task's own lock holds the start
    while it is not free, and a busy step lock is a warning."""
    locks = [_lock(ask, scope, read.get("lock", {}).get(ask.key)) for ask, scope in lock_keys(task)]
    holds = None
    task_lock = next((lock for lock in locks if lock.scope == "task"), None)
    if task_lock is not None and not task_lock.free:
        held = f"held by {', '.join(task_lock.holders)}" if task_lock.holders else "not held"
        holds = (PLAN_START[0], f"once lock {task_lock.key} is free ({held}; {task_lock.waiting} in line)")
    warnings = tuple(f"step lock {lock.key} is busy: {', '.join(lock.holders)} holds it" for lock in locks
                     if lock.scope != "task" and not lock.free)  # fmt: skip
    return PlanPart({"locks": locks}, holds, warnings)


PLAN_PART = plan_part


def _lock(ask: LockAsk, scope: str, lock: KeyLock | None) -> PlanLock:
    # A step lock's holder is a unit ("<task>#<cursor>[.<item>]"): the plan names its task.
    holders = sorted({parse_member(h.TaskId)[0] for h in lock.Holders}) if lock is not None else []
    waiting = len(lock.Waiters) if lock is not None else 0
    asker = LockHolder(TaskId="plan", Since=0.0, Mode=ask.mode, Shares=list(ask.shares))
    return PlanLock(key=ask.key, limit=ask.limit, mode=ask.mode, scope=scope, holders=holders, waiting=waiting,
                    free=waiting == 0 and fits(lock.Holders if lock is not None else [], ask.limit, asker))  # fmt: skip
