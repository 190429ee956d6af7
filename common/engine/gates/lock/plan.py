"""The lock gates' part of a dry run's plan: the keys a task would ask for that its submission can
name, whose state the plan shows (oss/services/plans.py). Pure."""

from __future__ import annotations

from common.engine.core.key_templates import LockKeyError, render_key
from common.engine.core.unit_parameters import unit_secrets
from common.engine.document import Task
from common.engine.gates.lock.task_lock import LockAsk, ask_for, asked

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
