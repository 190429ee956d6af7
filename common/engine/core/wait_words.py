"""A wait as people read it beside "Waiting for", as plain data every surface renders the same
way (the console draws it from the task view; a new gate needs no code there): words, each plain
text, a name shown strong, a time (epoch seconds, shown in the reader's zone) or another task (a
link), and a style the console gives its line (`frozen`, `drained`). A gate says its own in its
folder's `shown.py` (`WAIT_WORDS(task, wait)`; else its kind, its `describe_wait`, since and
until when), and what a run it holds waits for (`RUN_WAIT(task, run)`); a kind of step says the
latter as `describe_run`. A wait of no gate (a parked step's) reads as its kind and key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
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


@cache
def _said(attribute: str) -> dict[int, Callable[..., Any]]:
    """Each gate's `shown.py`'s `attribute`, by the gate's place in the registry's order."""
    from common.engine.core.declared import beside
    from common.engine.registry import GATES  # the registry imports every plug-in: asked at run time

    return {index: getattr(module, attribute) for index, gate in enumerate(GATES)
            for module in beside((gate,), "shown") if hasattr(module, attribute)}


def run_words(task: Any, run: Any) -> str | None:
    """What an unfinished run waits for in a state of a plug-in's own (a child task, the step's
    lock, a drained module's hold), as its step's kind or a gate says it; None: nothing of its own."""
    from common.engine.registry import kind_of

    said = kind_of(task.Steps[run.Cursor]).describe_run(task, run)
    if said is not None:
        return said
    return next((text for _, ask in sorted(_said("RUN_WAIT").items()) if (text := ask(task, run)) is not None), None)


def wait_words(task: Any, wait: WaitCondition | None) -> WaitWords | None:
    """The words of what `task` waits for (`wait`: its `WaitingFor` as shown, a derived one
    too), by the gate whose wait it is; None when it waits for nothing."""
    if wait is None:
        return None
    from common.engine.registry import GATES, gate_of_wait

    gate = gate_of_wait(wait.Kind)
    if gate is None:
        return plain_words(wait, wait.Key or wait.TaskId or "")
    own = _said("WAIT_WORDS").get(GATES.index(gate))
    return own(task, wait) if own is not None else plain_words(wait, gate.describe_wait(task, wait))
