"""How people read a freeze window (common.engine.core.gate_text, wait_words): how a dry run's
plan says a start it holds first, and its wait's words (it starts once the window ends)."""

from common.engine.core.wait_words import STRONG, TEXT, TIME, WaitWords

PLAN_START = ("freeze", "once its freeze window ends")  # the plan's `when`, its words


def WAIT_WORDS(task, wait) -> WaitWords:  # type: ignore[no-untyped-def]  # noqa: N802 (a declaration)
    words = ((TEXT, "freeze window "), (STRONG, wait.Key), (TEXT, " to end at "), (TIME, wait.Until))
    return WaitWords(kind=str(wait.Kind), words=words, style="frozen")
