"""What the rate gate says of a task in `baton get`'s summary (common.engine.core.gate_text): the
start slot its task type's rate gave it, and a step whose attempt waits for a slot of its own rate;
how a plan says a start it holds; and its wait in the task view's words (core/wait_words.py)."""

from __future__ import annotations

from common.engine.core.wait_words import TEXT, TIME, WaitWords, plain_words
from common.engine.document import Task, WaitCondition
from common.engine.gates.freeze.window import utc_text
from common.engine.gates.rate.task_rate import per_text


def task_lines(task: Task) -> list[str]:
    if task.Rate is None or task.Rate.State != "taken":
        return []
    return [f"rate {task.Rate.Key} ({task.Rate.Limit} per {per_text(task.Rate.Per)}): "
            f"slot taken at {utc_text(task.Rate.Since or 0.0)}"]


def step_note(task: Task, index: int) -> str:
    rate = task.Steps[index].Rate
    if rate is None or not any(r.Cursor == index and r.State == "waiting_rate" for r in task.Runs):
        return ""
    return f"waiting for a start slot of rate {rate.Key}: {rate.Limit} per {per_text(rate.Per)}"


TASK_LINES = task_lines
STEP_NOTE = step_note
# How a dry run's plan says its start when the rate holds it first (its `when`, its words).
PLAN_START = ("rate", "once a start slot of its rate frees")


def wait_words(task: Task, wait: WaitCondition) -> WaitWords:
    """The task view's words of its wait: its rate, and when its next slot frees (a time in the
    reader's zone), a step's own rate's by its key."""
    rate = task.Rate
    if rate is None or wait.Key != rate.Key:  # a step's own rate: its key, `Until` its next slot
        return plain_words(wait, wait.Key or "")
    words: list[tuple[str, object]] = [(TEXT, f"rate {rate.Key}: {rate.Limit} per {per_text(rate.Per)}")]
    if rate.NextAt is not None:
        words += [(TEXT, ", next slot at "), (TIME, rate.NextAt)]
    return WaitWords(kind=str(wait.Kind), words=(*words, (TEXT, " since "), (TIME, wait.Since)))


WAIT_WORDS = wait_words
