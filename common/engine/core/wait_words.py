"""A wait as people read it beside "Waiting for", as plain data every surface renders the same
way (the console draws it from the task view; a new gate needs no code there): words, each plain
text, a name shown strong, a time (epoch seconds, shown in the reader's zone) or another task (a
link), and a style the console gives its line (`frozen`, `drained`). A gate says its own
(`Gate.wait_words`); a wait of no gate (a parked step's) reads as its kind and key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from common.engine.document import WaitCondition

TEXT, STRONG, TIME, TASK = "text", "strong", "time", "task"  # the kinds of word


@dataclass(frozen=True)
class WaitWords:
    kind: str  # the wait's kind, as `WaitingFor.Kind`
    words: tuple[tuple[str, Any], ...]  # (kind of word, its value), in reading order
    style: str = ""


def plain_words(wait: WaitCondition, what: str) -> WaitWords:
    """"<kind> <what> since <time>", and until when it waits when it knows: a gate that says no
    more than what it waits for (`what`: its `describe_wait`), or a wait of no gate."""
    kind = str(wait.Kind)
    words: list[tuple[str, Any]] = [(TEXT, f"{kind} {what}".rstrip()), (TEXT, " since "), (TIME, wait.Since)]
    if wait.Until is not None:
        words += [(TEXT, " until "), (TIME, wait.Until)]
    return WaitWords(kind=kind, words=tuple(words))


def run_words(task: Any, run: Any) -> str | None:
    """What an unfinished run waits for in a state of a plug-in's own (a child task, the step's
    lock, a drained module's hold), as its step's kind or a gate says it; None: nothing of its own."""
    from common.engine.registry import GATES, kind_of

    said = kind_of(task.Steps[run.Cursor]).describe_run(task, run)
    return said if said is not None else next((s for gate in GATES if (s := gate.describe_run(task, run)) is not None), None)


def wait_words(task: Any, wait: WaitCondition | None) -> WaitWords | None:
    """The words of what `task` waits for (`wait`: its `WaitingFor` as shown, a derived one
    too), by the gate whose wait it is; None when it waits for nothing."""
    if wait is None:
        return None
    from common.engine.registry import gate_of_wait  # the registry imports every plug-in: asked at run time

    gate = gate_of_wait(wait.Kind)
    return gate.wait_words(task, wait) if gate is not None else plain_words(wait, wait.Key or wait.TaskId or "")
