"""Cancel, pause, resume and skip ask the kind of each step what they mean for it
(common.engine.kinds.kind.StepKind): a kind added to the registry, and declared by a step
(`Step.Kind`), is asked, with no change to common.engine.operator, and a command step keeps the
engine's own handling."""

from __future__ import annotations

import pytest

from common.engine.document import OperatorRequest, Run, Task
from common.engine import registry
from common.engine.kinds.command.kind import CommandKind
from common.engine.operator.actions import cancel
from common.engine.operator.flow import pause, resume, skip
from common.engine.states import Phase, RunState, StepState
from common.engine.core.entries import Refusal, Timing, claim
from tests.support.builders import counter_ids, make_step
from tests.unit.test_graph_transitions import FAIL, do, graph, message
from tests.unit.test_graph_transitions import new as new_task

IDS = counter_ids("k")


class Watched(CommandKind):
    """A command in all but the operator's actions: the steps named `w...` declare it, and it
    records what cancel, pause and resume ask of it; a cancel it takes over leaves its run alone."""

    name = "watched"

    def __init__(self) -> None:
        self.asked: list[tuple] = []

    def cancel_run(self, task: Task, run: Run, request: OperatorRequest) -> bool:
        self.asked.append(("cancel", run.Cursor, request.Actor, request.Reason))
        return True

    def pause(self, task: Task, cursor: int, request: OperatorRequest) -> None:
        self.asked.append(("pause", cursor, request.Actor, request.Reason))

    def resume(self, task: Task, cursor: int, request: OperatorRequest, ids) -> None:  # type: ignore[no-untyped-def]
        self.asked.append(("resume", cursor, request.Actor, request.Reason))

    def skip_refused(self, task: Task, run: Run) -> str | None:
        self.asked.append(("skip", run.Cursor))
        return "a watched step is never skipped"


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> Watched:
    kind = Watched()
    monkeypatch.setitem(registry.KINDS, kind.name, kind)
    return kind


def new(steps, *args, **kwargs):  # type: ignore[no-untyped-def]
    """The task of `steps`, those named `w...` declaring the watched kind."""
    for step in steps:
        if step.Name.startswith("w"):
            step.Kind = "watched"
    return new_task(steps, *args, **kwargs)


def done(result):  # type: ignore[no-untyped-def]
    assert not isinstance(result, Refusal), result
    return result


def test_pause_and_resume_ask_each_step_of_the_new_kind_and_no_other(watched: Watched) -> None:
    task = new(graph(("a", []), ("wb", [0]), ("c", [0]), ("wd", [1, 2])))
    paused = done(pause(task, "olga", "window", Timing(300.0), ids=IDS))
    done(resume(paused, "olga", "over", Timing(400.0), ids=IDS))
    assert watched.asked == [("pause", 1, "olga", "window"), ("pause", 3, "olga", "window"),
                             ("resume", 1, "olga", "over"), ("resume", 3, "olga", "over")]  # fmt: skip


def test_a_cancel_that_stops_running_runs_leaves_a_kinds_own_run_to_it(watched: Watched) -> None:
    task = new(graph(("wa", []), ("b", [])))  # two roots: both dispatched
    for cursor in (0, 1):
        task = done(claim(task, message(task, cursor), "w", Timing(200.0)))
    cancelled = done(cancel(task, "olga", "wrong host", Timing(300.0), ids=IDS, stop_running=True))
    assert watched.asked == [("cancel", 0, "olga", "wrong host")]
    # The command step is stopped the engine's way; the watched one is the kind's to end.
    assert [(r.Cursor, r.Phase, r.State) for r in cancelled.Runs] == [(0, Phase.NORMAL, RunState.RUNNING)]
    assert cancelled.Steps[1].State is StepState.FAILED and cancelled.Steps[0].State is StepState.RUNNING


def test_skip_asks_the_kind_of_the_failing_step_whether_it_may(watched: Watched) -> None:
    steps = [make_step("a", retry=3), make_step("wb", retry=3), make_step("c")]
    task = do(do(new(steps), 0, FAIL), 0)  # a failed once, then succeeded: wb dispatched
    task = do(task, 1, FAIL)  # wb failed its first attempt: its retry is pending
    refused = skip(task, "olga", "x", Timing(300.0), ids=IDS, cursor=1)
    assert isinstance(refused, Refusal) and refused.reason == "a watched step is never skipped"
    assert watched.asked == [("skip", 1)]
