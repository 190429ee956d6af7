"""common.engine.core.routing.plan on its own: the line table still holds, and the graph rules of
docs/design/graph-and-routing.md, "Routing" (readiness, draining, reverse topological rollback,
passing over)."""

from __future__ import annotations

from common.engine.document import Run, StepItem
from common.engine.core.routing import Plan, plan
from common.engine.core.step_summary import summarize
from common.engine.states import Phase, StepState, TaskStatus
from common.engine.core.entries import Timing, create_task
from tests.support.builders import counter_ids, make_step

W, RUN, OK, F = StepState.WAITING, StepState.RUNNING, StepState.SUCCEEDED, StepState.FAILED
RB, RBD, RBF = StepState.ROLLING_BACK, StepState.ROLLED_BACK, StepState.ROLLBACK_FAILED


def task_with(states, after=None, rollback=None, status=TaskStatus.RUNNING, runs=()):
    """A task whose steps are in `states`, with no runs unless given (plan reads states only)."""
    steps = [make_step(f"s{i}", rollback=True if rollback is None else rollback[i]) for i in range(len(states))]
    if after is not None:
        for step, deps in zip(steps, after):
            step.After = list(deps)
    task = create_task(task_type="t", steps=steps, parameters={}, timing=Timing(1.0), ids=counter_ids())
    task.Runs, task.Outbox = list(runs), []
    for step, state in zip(task.Steps, states):
        step.State = state
    task.TaskStatus = status
    return task


def run(cursor, phase=Phase.NORMAL, item=None):
    return Run(Cursor=cursor, Item=item, Phase=phase, Attempt=1, DispatchId=f"d{cursor}{phase}{item}", Deadline=9.0)


# --- a line: the line table ----------------------------------------------------------------------


def test_line_success_starts_the_next_step_and_the_last_one_finishes():
    assert plan(task_with([OK, W, W])) == Plan(start=[(1, None)])
    assert plan(task_with([OK, OK, OK])) == Plan(finish=TaskStatus.SUCCESS)


def test_line_failure_rolls_back_this_step_then_each_earlier_one():
    rolling = TaskStatus.ROLLING_BACK
    assert plan(task_with([OK, F, W], status=rolling)) == Plan(roll_back=[(1, None)])
    assert plan(task_with([OK, RBD, W], status=rolling)) == Plan(roll_back=[(0, None)])
    assert plan(task_with([RBD, RBD, W], status=rolling)) == Plan(finish=TaskStatus.ROLLED_BACK)


def test_line_failed_rollback_ends_rollback_failed():
    assert plan(task_with([OK, RBF, W], status=TaskStatus.ROLLING_BACK)) == Plan(finish=TaskStatus.ROLLBACK_FAILED)


def test_steps_without_rollback_are_passed_over():
    task = task_with([OK, OK, F], rollback=[True, False, True], status=TaskStatus.ROLLING_BACK)
    assert plan(task) == Plan(roll_back=[(2, None)])
    task.Steps[2].State = RBD
    assert plan(task) == Plan(skip=[(1, None)])  # then s0 becomes ready on the next round
    task.Steps[1].State = StepState.SKIPPED
    assert plan(task) == Plan(roll_back=[(0, None)])


# --- graphs ---------------------------------------------------------------------------------------

DIAMOND = [[], [0], [0], [1, 2]]


def test_a_step_is_ready_once_all_it_waits_for_succeeded():
    assert plan(task_with([OK, W, W, W], DIAMOND)) == Plan(start=[(1, None), (2, None)])
    assert plan(task_with([OK, OK, RUN, W], DIAMOND, runs=[run(2)])) == Plan()
    assert plan(task_with([OK, OK, OK, W], DIAMOND)) == Plan(start=[(3, None)])


def test_several_roots_start_together():
    assert plan(task_with([W, W, W], [[], [], [0, 1]], status=TaskStatus.NOT_STARTED)) == Plan(start=[(0, None), (1, None)])


def test_no_rollback_starts_while_a_normal_run_drains():
    task = task_with([OK, F, RUN, W], DIAMOND, status=TaskStatus.ROLLING_BACK, runs=[run(2)])
    assert plan(task) == Plan()


def test_a_rollback_waits_for_every_dependent_to_settle():
    rolling = TaskStatus.ROLLING_BACK
    assert plan(task_with([OK, OK, F, W], DIAMOND, status=rolling)) == Plan(roll_back=[(1, None), (2, None)])
    assert plan(task_with([OK, RBD, RB, W], DIAMOND, status=rolling, runs=[run(2, Phase.ROLLBACK)])) == Plan()
    assert plan(task_with([OK, RBD, StepState.CANCELLED, W], DIAMOND, status=rolling)) == Plan(roll_back=[(0, None)])


def test_nothing_more_starts_under_a_cancel():
    task = task_with([OK, W, W, W], DIAMOND)
    from common.engine.document import OperatorRequest

    task.CancelRequested = OperatorRequest(Actor="op", Reason="r", Time=1.0)
    assert plan(task) == Plan()


def test_for_each_items_start_up_to_max_parallel_and_roll_back_likewise():
    task = task_with([OK, RUN, W], [[], [0], [1]])
    task.Steps[1].ForEach, task.Steps[1].MaxParallel, task.Steps[1].Kind = "xs", 2, "for_each"
    task.Steps[1].Items = [StepItem(State=s) for s in (OK, RUN, W, W)]
    task.Runs = [run(1, item=1)]
    assert plan(task) == Plan(start=[(1, 2)])
    task.Steps[1].Items = [StepItem(State=s) for s in (OK, OK, F, StepState.CANCELLED)]
    task.Runs, task.TaskStatus = [], TaskStatus.ROLLING_BACK
    assert plan(task) == Plan(roll_back=[(1, 0), (1, 1)])


def test_a_for_each_step_state_summarises_its_items():
    step = make_step("x")
    step.Items = [StepItem(State=s) for s in (OK, RUN)]
    assert summarize(step.State, step.Items) is RUN
    step.Items = [StepItem(State=s) for s in (OK, OK)]
    assert summarize(step.State, step.Items) is OK
    step.Items = [StepItem(State=s) for s in (RBD, StepState.CANCELLED)]
    assert summarize(step.State, step.Items) is RBD
    step.Items = [StepItem(State=s) for s in (RBF, RB)]
    assert summarize(step.State, step.Items) is RBF
