"""How people read a wait for another task (common.engine.core.gate_text, wait_words): how a dry
run's plan says a start it holds first, and its wait's words (the task it waits for, a link)."""

from common.engine.core.wait_words import TASK, TEXT, TIME, WaitWords

PLAN_START = ("after_task", "after another task")  # the plan's `when`, its words


def WAIT_WORDS(task, wait) -> WaitWords:  # type: ignore[no-untyped-def]  # noqa: N802 (a declaration)
    words = ((TEXT, "task "), (TASK, wait.TaskId), (TEXT, " to succeed, since "), (TIME, wait.Since))
    return WaitWords(kind=str(wait.Kind), words=words)
