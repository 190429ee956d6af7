"""The engine's documents, as pydantic models: the task with its steps and runs, the step message,
the alarm, a step's item record and a key's lock document. Public: code outside the engine
imports them from here (each from its home on first use)."""

from __future__ import annotations

from common.engine.core.declared import declared_exports
from common.exports import lazy

EXPORTS: dict[str, tuple[str, ...]] = {
    "common.engine.core.step_doc": ("BackoffPolicy", "ChildTemplate", "Step", "StepItem", "UnitState"),
    "common.engine.core.task_doc": (
        "HistoryEvent", "NotifyTarget", "OutboxEntry", "ParentLink", "Run", "Task", "TaskBefore", "WaitCondition",
        "lend_to_change",
    ),
    "common.engine.core.messages": ("Alarm", "StepMessage", "named_task"),
    "common.engine.core.doc_base": ("OperatorRequest",),
    **declared_exports("DOCUMENT"),  # each kind's and gate's, in its folder's face.py
}
__all__ = sorted(name for names in EXPORTS.values() for name in names)
__getattr__ = lazy(__name__, EXPORTS)
