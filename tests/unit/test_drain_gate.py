"""common.engine.gates.drain.gate: a drained module holds a run at the claim, the sweeper re-publishes
a held run every few seconds without backing off or writing history, and the first claim after
the undrain lets it go; a cancel never leaves a stale drain wait behind."""

from common.engine.document import StepMessage
from common.engine.gates.drain.gate import DRAIN_RECHECK_SECONDS, drain_wait
from common.engine.gates.drain.changes import drain_hold, release_hold
from common.engine.operator.actions import cancel
from common.engine.states import RunState
from common.engine.core.entries import Refusal, Timing, claim, create_task, expire
from tests.support.builders import counter_ids, make_step, only_run


def written(result):
    assert not isinstance(result, Refusal), result
    return result


def message_of(task) -> StepMessage:
    entry = next(e for e in task.Outbox if e.DispatchId == only_run(task).DispatchId)
    return StepMessage.model_validate(entry.Body)


def held_task(now: float = 101.0):
    task = create_task(task_type="t", steps=[make_step("only")], parameters={}, timing=Timing(100.0), ids=counter_ids())
    message = message_of(task)
    return written(drain_hold(task, message, "mod", "alice", "deploy 1.4", Timing(now))), message


def test_a_hold_marks_the_run_records_who_and_why_once_and_drops_the_delivered_entry():
    task, message = held_task()
    run = only_run(task)
    assert (run.State, run.HeldBy, run.HeldSince, run.Deadline) == (RunState.PENDING, "mod", 101.0,
                                                                   101.0 + DRAIN_RECHECK_SECONDS)
    assert task.Outbox == [] and task.to_doc()["SweepAt"] == 101.0 + DRAIN_RECHECK_SECONDS  # the sweeper looks again
    (event,) = [e for e in task.History if e.Event == "waiting_for_drain"]
    assert (event.Actor, event.Cursor, event.Message) == ("alice", 0, "module mod drained by alice: deploy 1.4")
    wait = drain_wait(task)
    assert (wait.Kind, wait.Key, wait.Since) == ("drain", "mod", 101.0)
    assert task.WaitingFor is None  # derived, never stored
    again = written(drain_hold(task, message, "mod", "alice", "deploy 1.4", Timing(107.0)))
    assert [e.Event for e in again.History].count("waiting_for_drain") == 1
    assert only_run(again).Deadline == 107.0 + DRAIN_RECHECK_SECONDS and only_run(again).HeldSince == 101.0


def test_the_sweeper_re_publishes_a_held_run_soon_without_backoff_or_history():
    task, _ = held_task()
    for now in (106.0, 111.0, 116.0):
        task = written(expire(task, Timing(now, redeliver_after=10)))
        run = only_run(task)
        assert (run.Deadline, run.Redispatches) == (now + DRAIN_RECHECK_SECONDS, 0)
        assert [e.DueAt for e in task.Outbox] == [now]  # published again now
        task = task.model_copy(update={"Outbox": []})  # the flush sent it
    assert not [e for e in task.History if e.Event == "redispatched"]


def test_the_claim_after_the_undrain_releases_the_hold_naming_who_let_it_go():
    task, message = held_task()
    claimed = written(claim(task, message, "w1", Timing(120.0, lease=5)))
    release_hold(claimed, message.DispatchId, "bob", "1.4 is out", 120.0)
    run = only_run(claimed)
    assert (run.State, run.HeldBy, run.HeldSince) == (RunState.RUNNING, None, None)
    (event,) = [e for e in claimed.History if e.Event == "drain_released"]
    assert (event.Actor, event.Message) == ("bob", "module mod undrained by bob: 1.4 is out")
    assert drain_wait(claimed) is None


def test_stale_or_claimed_deliveries_are_not_held():
    task, message = held_task()
    claimed = written(claim(task, message, "w1", Timing(120.0, lease=5)))
    assert isinstance(drain_hold(claimed, message, "mod", "a", "r", Timing(121.0)), Refusal)
    stale = message.model_copy(update={"DispatchId": "gone"})
    assert isinstance(drain_hold(task, stale, "mod", "a", "r", Timing(121.0)), Refusal)


def test_a_cancelled_task_shows_no_drain_wait():
    task, _ = held_task()
    cancelled = written(cancel(task, "carol", "not needed", Timing(110.0)))
    assert not [r for r in cancelled.Runs if r.HeldBy] and drain_wait(cancelled) is None
