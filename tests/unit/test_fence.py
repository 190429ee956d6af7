"""The fencing token check: pure, over the task document (common/engine/core/fence.py), and as a command
sees it through its context (in the command process, against a real SQLite store)."""

import pytest

from common.engine.core.fence import FencingToken, StaleFence, check_fence, current_run_refusal
from common.runtime.child import execute
from common.runtime.registry import CommandContext, CommandRegistry
from common.engine.states import Phase
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import Refusal, Timing, claim, expire
from tests.support.builders import make_step, only_run
from tests.unit.test_transitions import message_for, new_task


def claimed(owner="w1", now=101.0):
    task = new_task(steps=[make_step("a", retry=1), make_step("b")])
    message = message_for(task)
    result = claim(task, message, owner, Timing(now, lease=10))
    assert not isinstance(result, Refusal)
    return result


def token_of(task, owner="w1"):
    run = only_run(task)
    return FencingToken(task.TaskId, run.Cursor, run.Phase, run.Attempt, run.DispatchId, owner)


def test_the_claimed_run_is_current_for_its_owner_only():
    task = claimed()
    assert current_run_refusal(task, token_of(task)) is None
    assert "under w1" in current_run_refusal(task, token_of(task, owner="w2"))


def test_a_run_taken_over_after_its_lease_lapsed_is_stale():
    task = claimed()
    token = token_of(task)
    lapsed = expire(task, Timing(200.0, lease=10), ids=lambda: "retry-1")  # worker lost: attempt 2 dispatched
    assert not isinstance(lapsed, Refusal)
    assert "dispatched again" in current_run_refusal(lapsed, token)
    with pytest.raises(StaleFence, match="attempt 1 is stale") as refused:
        check_fence(lambda _id: lapsed, token)
    assert not refused.value.retryable


def test_a_missing_task_another_step_or_phase_is_stale():
    task = claimed()
    token = token_of(task)
    assert current_run_refusal(None, token) == "the task does not exist"
    other = FencingToken(task.TaskId, 1, Phase.NORMAL, 1, token.dispatch_id, "w1")
    assert "another step" in current_run_refusal(task, other)
    rollback = FencingToken(task.TaskId, 0, Phase.ROLLBACK, 1, token.dispatch_id, "w1")
    assert "another step" in current_run_refusal(task, rollback)


registry = CommandRegistry("fenced")


@registry.command()
def fenced_effect(ctx: CommandContext) -> dict:
    ctx.check_fence()
    return {"effect": "done"}


def test_a_command_checks_its_fence_against_the_store(tmp_path):
    store = SqliteStore(tmp_path / "fence.db")
    task = claimed()
    store.insert(task)
    run = only_run(task)
    request = {
        "task_id": task.TaskId, "task_type": task.TaskType, "command": "fenced_effect", "cursor": run.Cursor,
        "phase": int(run.Phase), "attempt": run.Attempt, "idempotency_key": "k", "run_key": task.TaskId,
        "parameters": {}, "dispatch_id": run.DispatchId, "owner": "w1",
    }  # fmt: skip
    assert execute(registry, request, False, read_task=store.get)["output"] == {"effect": "done"}
    late = execute(registry, {**request, "owner": "w2"}, False, read_task=store.get)
    assert not late["ok"] and not late["retryable"] and "stale" in late["message"]
    store.close()


def test_rollback_reached_once_the_steps_rollback_was_claimed_or_the_task_failed():
    from common.engine.core.fence import rollback_reached
    from common.engine.states import ResultCode
    from common.engine.core.entries import AttemptResult, finish_attempt

    task = claimed()  # step 0 running, normal phase
    assert not rollback_reached(task, 0)
    failed = finish_attempt(task, only_run(task).DispatchId, "w1",
                            AttemptResult(ResultCode.FAILED, "x", retryable=False), Timing(102.0))  # fmt: skip
    assert not rollback_reached(failed, 0)  # its rollback is dispatched, not begun
    rolling = claim(failed, message_for(failed), "w2", Timing(103.0))
    assert only_run(rolling).Phase is Phase.ROLLBACK and rollback_reached(rolling, 0)
    assert rollback_reached(None, 0)
