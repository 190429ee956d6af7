"""What each gate says of a task as people read it (`baton get`'s summary, a dry run's plan): its
folder's `shown.py` (`TASK_LINES(task)`: lines about the task, `STEP_NOTE(task, index)`: a note on
one step's line, `PLAN_START`: how a plan says a start it holds first), found by folder and asked
in the registry's order, so the summary and the plan's words name no gate."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from common.engine.core.declared import beside
from common.engine.document import Task
from common.engine.registry import GATES


@cache
def _shown() -> tuple[tuple[Callable[[Task], list[str]], ...], tuple[Callable[[Task, int], str], ...]]:
    modules = beside(GATES, "shown")
    return (tuple(m.TASK_LINES for m in modules if hasattr(m, "TASK_LINES")),
            tuple(m.STEP_NOTE for m in modules if hasattr(m, "STEP_NOTE")))


def gate_lines(task: Task) -> list[str]:
    """Each gate's lines about the task (its lock held, a start slot taken), in the registry's order."""
    return [line for lines in _shown()[0] for line in lines(task)]


def gate_notes(task: Task, index: int) -> str:
    """What the gates note on step `index`'s line ("waiting for a start slot of rate ..."), each
    after two spaces."""
    return "".join(f"  {note}" for step_note in _shown()[1] if (note := step_note(task, index)))


@cache
def start_phrases() -> dict[str, str]:
    """How a plan says its start when a gate holds it first (its `when` -> "once its lock is
    free"), each gate's `PLAN_START`, in the registry's order."""
    return dict(m.PLAN_START for m in beside(GATES, "shown") if hasattr(m, "PLAN_START"))
