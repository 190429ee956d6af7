"""How people read a module drain (common.engine.core.wait_words): the task's wait (it goes once
an operator undrains the module: a deploy), and a run it holds."""

from common.engine.core.wait_words import STRONG, TEXT, TIME, WaitWords


def WAIT_WORDS(task, wait) -> WaitWords:  # type: ignore[no-untyped-def]  # noqa: N802 (a declaration)
    words = ((TEXT, "module "), (STRONG, wait.Key), (TEXT, " to be undrained (drained since "), (TIME, wait.Since),
             (TEXT, ")"))
    return WaitWords(kind=str(wait.Kind), words=words, style="drained")


def RUN_WAIT(task, run) -> str | None:  # type: ignore[no-untyped-def]  # noqa: N802
    return None if run.HeldBy is None else f"held: module {run.HeldBy} is drained; it runs once the module is undrained"
