"""Verifying an unknown outcome (docs/design/runtime.md, "Verifying an unknown outcome"): when a
verify runs, what each verdict does, the call that runs it before the command, and the engine's
count and history of verdicts."""

from __future__ import annotations

import pytest

from common.engine.document import UnitState
from common.engine.kinds.for_each.item_changes import finish_item_attempt
from common.engine.states import Phase, ResultCode, StepState, TaskStatus
from common.engine.core.entries import AttemptResult, Timing
from common.runtime.invoke import call_sync, command_context, result_of
from common.runtime.registry import CommandRegistry, Verdict
from common.runtime.verify import ROLLBACK, RETRY, VerifyPlan, plan_for, settle, verify_mode
from tests.support.builders import counter_ids
from tests.unit.test_check_again import do, line, new, run_of
from tests.unit.test_item_changes import NOW, _claimed, _records, _task

N, R = Phase.NORMAL, Phase.ROLLBACK


def unit(code: ResultCode | None, verifies: int = 0, rollback_verifies: int = 0) -> UnitState:
    return UnitState(Code=code, Verifies=verifies, RollbackVerifies=rollback_verifies)


@pytest.mark.parametrize("code, phase, attempt, mode", [
    (ResultCode.TIMED_OUT, N, 2, RETRY),
    (ResultCode.WORKER_LOST, N, 3, RETRY),
    (ResultCode.PROCESS_DIED, N, 2, RETRY),
    (ResultCode.FAILED, N, 2, None),  # a known failure: retried as always
    (None, N, 1, None),  # a first attempt has nothing to verify
    (ResultCode.TIMED_OUT, R, 1, ROLLBACK),
    (ResultCode.OUTCOME_UNKNOWN, R, 1, ROLLBACK),
    (ResultCode.FAILED, R, 1, None),
    (ResultCode.TIMED_OUT, R, 2, None),  # the rollback's own retry: verified once, at its start
    (ResultCode.OK, R, 1, None),
])
def test_a_verify_runs_only_after_an_unknown_outcome(code, phase, attempt, mode):
    assert verify_mode(unit(code), phase, attempt) == mode


def plan(mode: str, count: int = 0, limit: int = 3) -> VerifyPlan:
    found = plan_for(unit(ResultCode.TIMED_OUT, count, count), N if mode == RETRY else R, 2 if mode == RETRY else 1,
                     "make", "key", limit, 0.5)
    assert found is not None and found.mode == mode
    return found


def test_each_verdict_before_a_retry():
    done = settle(plan(RETRY), Verdict.done({"made": 1}, "it is there"))
    assert done["ok"] and done["output"] == {"made": 1} and "verified done" in done["message"]
    assert settle(plan(RETRY), Verdict.not_done("nothing there")) is None  # the command runs
    unknown = settle(plan(RETRY), Verdict.unknown("server down"))
    assert unknown["check_again"] == 0.5 and "verify 1 of 3" in unknown["message"]


def test_each_verdict_before_a_rollback():
    skipped = settle(plan(ROLLBACK), Verdict.not_done("never made"))
    assert skipped["ok"] and skipped["output"] == {} and "nothing to roll back" in skipped["message"]
    assert settle(plan(ROLLBACK), Verdict.done(reason="it is there")) is None  # the rollback runs
    assert settle(plan(ROLLBACK), Verdict.unknown("?"))["check_again"] == 0.5


def test_the_unknown_that_reaches_the_limit_ends_the_attempt_outcome_unknown():
    assert not plan(RETRY, count=1).final and plan(RETRY, count=2).final
    final = result_of(settle(plan(RETRY, count=2), Verdict.unknown("server down")))
    assert final.code is ResultCode.OUTCOME_UNKNOWN and not final.retryable and final.check_again is None
    assert final.verified == ("unknown", "server down") and "after 3 verifies" in final.message


class World:
    def __init__(self, verdict):
        self.made: list[str] = []
        self.registry = CommandRegistry("test")
        self.verdict = verdict

        @self.registry.command()
        def make(ctx):
            self.made.append(ctx.idempotency_key)
            return {"made": True}

        @self.registry.verify("make")
        def made(parameters, ctx):
            if isinstance(self.verdict, Exception):
                raise self.verdict
            self.seen = (parameters, ctx.command, ctx.idempotency_key)
            return self.verdict

    def call(self, verify: VerifyPlan | None):
        request = {"task_id": "t", "task_type": "tt", "command": "make", "cursor": 0, "phase": 0, "attempt": 2,
                   "idempotency_key": "t:0:normal", "run_key": "t", "parameters": {"x": 1}}
        context = command_context(self.registry, request)
        return result_of(call_sync(self.registry, context, fault_injection=False, verify=verify))


def test_done_answers_without_running_the_command():
    world = World(Verdict.done({"made": True}, "found it"))
    result = world.call(plan(RETRY))
    assert result.ok and result.output == {"made": True} and world.made == []
    assert result.verified == ("done", "found it") and world.seen == ({"x": 1}, "make", "key")


def test_not_done_runs_the_command_and_its_outcome_carries_the_verdict():
    world = World(Verdict.not_done("absent"))
    result = world.call(plan(RETRY))
    assert result.ok and world.made == ["t:0:normal"] and result.verified == ("not_done", "absent")


def test_a_verify_that_raises_or_answers_nonsense_is_unknown():
    assert World(RuntimeError("boom")).call(plan(RETRY)).verified[0] == "unknown"
    nonsense = World({"done": True}).call(plan(RETRY))
    assert nonsense.check_again is not None and "not a Verdict" in nonsense.verified[1]


def test_without_a_plan_or_a_verify_the_command_runs_as_always():
    world = World(Verdict.done())
    assert world.call(None).verified is None and world.made == ["t:0:normal"]
    bare = CommandRegistry("bare")
    bare.command("make")(lambda ctx: {"ran": 1})
    context = command_context(bare, {"task_id": "t", "task_type": "tt", "command": "make", "cursor": 0, "phase": 0,
                                     "attempt": 2, "idempotency_key": "k", "run_key": "t", "parameters": {}})
    assert result_of(call_sync(bare, context, False, verify=plan(RETRY))).output == {"ran": 1}


def test_a_verify_registered_twice_is_refused():
    registry = CommandRegistry("m")
    registry.verify("a")(lambda p, c: Verdict.done())
    with pytest.raises(ValueError, match="registered twice"):
        registry.verify("a")(lambda p, c: Verdict.done())


def unknown_verdict(reason: str = "server down") -> AttemptResult:
    return AttemptResult(ResultCode.OK, f"outcome unknown: {reason}", check_again=2.0, verified=("unknown", reason))


def test_the_engine_counts_unknown_verdicts_and_records_each_in_the_history():
    task = do(new(line(retry=2)), 0, AttemptResult(ResultCode.OK), 100.0)
    task = do(task, 1, AttemptResult(ResultCode.TIMED_OUT, "timed out after 5s"), 110.0)
    assert run_of(task, 1).Attempt == 2
    task = do(task, 1, unknown_verdict(), 120.0)
    task = do(task, 1, unknown_verdict(), 130.0)
    step = task.Steps[1]
    assert step.Verifies == 2 and step.Attempts == 2 and run_of(task, 1).Attempt == 2  # no attempt counted
    verified = [e for e in task.History if e.Event == "verified"]
    assert [e.Message for e in verified] == ["unknown: server down"] * 2 and verified[0].Attempt == 2
    done = AttemptResult(ResultCode.OK, "verified done", {"made": 1}, verified=("done", "found"))
    task = do(task, 1, done, 140.0)
    assert task.Steps[1].State is StepState.SUCCEEDED and task.Parameters["made"] == 1
    assert [e.Message for e in task.History if e.Event == "verified"][-1] == "done: found"
    assert task.Steps[1].Verifies == 2  # a known verdict counts nothing


def test_an_outcome_left_unknown_fails_the_step_and_its_rollback_verifies_with_its_own_count():
    task = do(new(line(retry=1)), 0, AttemptResult(ResultCode.OK), 100.0)
    task = do(task, 1, AttemptResult(ResultCode.WORKER_LOST, "lease lapsed"), 110.0)
    final = AttemptResult(ResultCode.OUTCOME_UNKNOWN, "outcome still unknown after 1 verifies: ?", retryable=False,
                          verified=("unknown", "?"))
    task = do(task, 1, final, 120.0)
    assert task.Steps[1].Code is ResultCode.OUTCOME_UNKNOWN and task.TaskStatus is TaskStatus.ROLLING_BACK
    assert task.Steps[1].Verifies == 1 and run_of(task, 1, phase=R).Attempt == 1
    task = do(task, 1, unknown_verdict(), 130.0, phase=R)
    assert task.Steps[1].RollbackVerifies == 1 and task.Steps[1].Verifies == 1


def test_an_item_record_counts_and_records_its_verdicts_too():
    task = _task(retry=1)
    claimed = _claimed(_records(task)[0], task)
    lost = finish_item_attempt(claimed, task, claimed.Run.DispatchId, "w",
                               AttemptResult(ResultCode.PROCESS_DIED, "died"), Timing(NOW + 2), counter_ids("d"))
    assert lost.Run.Attempt == 2 and verify_mode(lost, N, lost.Run.Attempt) == RETRY
    again = finish_item_attempt(_claimed(lost, task), task, lost.Run.DispatchId, "w", unknown_verdict(),
                                Timing(NOW + 3), counter_ids("e"))
    assert again.Verifies == 1 and again.Run.Attempt == 2 and again.State is StepState.RUNNING
    assert [e.Message for e in again.History if e.Event == "verified"] == ["unknown: server down"]
