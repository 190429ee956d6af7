"""common.engine.kinds.for_each.item_drain: a drained module holds an item's run on its record (who and why
once, its delivered entry dropped), the item sweep re-publishes a held run every few seconds
without backing off or writing history, the first claim after the undrain lets it go, and the
task shows the drain as its `WaitingFor` from the runs a reader found; plus the item's stop by a
cancel that stops running runs (common.engine.kinds.for_each.item_actions.stop_item)."""

from __future__ import annotations

from common.engine.document import StepMessage
from common.engine.gates.drain.gate import DRAIN_RECHECK_SECONDS, drain_wait
from common.engine.kinds.for_each.item_record import OWES_SETTLED, ItemRecord
from common.engine.kinds.for_each.item_actions import stop_item
from common.engine.kinds.for_each.item_changes import cancel_item, claim_item, expire_item, new_records
from common.engine.kinds.for_each.item_drain import claimed_releasing, hold_item
from common.engine.states import Phase, ResultCode, RunState, StepState, TaskStatus
from common.engine.core.entries import Refusal, Timing, create_task
from tests.support.builders import counter_ids, make_step

NOW = 1000.0


def _task():
    step = make_step("each")
    step.ForEach, step.MaxParallel, step.After = "hosts", 2, []
    task = create_task(task_type="t", steps=[step], parameters={"hosts": [0, 1, 2]}, timing=Timing(NOW),
                       task_id="t1", ids=counter_ids("t1"))
    task.Steps[0].ItemCount = 3
    return task


def _held(now: float = NOW + 1) -> tuple:
    task = _task()
    record = new_records(task, 0, [0, 1, 2], Timing(NOW), counter_ids("r"), "oss")[0]
    message = StepMessage.model_validate(record.Outbox[0].Body)
    held = hold_item(record, task, message, "mod", "alice", "deploy 1.4", Timing(now))
    assert isinstance(held, ItemRecord), held
    return task, held, message


def test_a_hold_marks_the_records_run_once_and_the_task_shows_the_drain():
    task, held, message = _held()
    run = held.Run
    assert (run.State, run.HeldBy, run.HeldSince, run.Deadline) == (RunState.PENDING, "mod", NOW + 1,
                                                                   NOW + 1 + DRAIN_RECHECK_SECONDS)
    assert held.Outbox == [] and held.to_doc()["SweepAt"] == NOW + 1 + DRAIN_RECHECK_SECONDS
    (event,) = [e for e in held.History if e.Event == "waiting_for_drain"]
    assert (event.Actor, event.Item, event.Message) == ("alice", 0, "module mod drained by alice: deploy 1.4")
    assert drain_wait(task) is None  # the task's own runs hold nothing: the records' runs are handed in
    wait = drain_wait(task, [held.Run])
    assert (wait.Kind, wait.Key, wait.Since) == ("drain", "mod", NOW + 1)
    again = hold_item(held, task, message, "mod", "alice", "deploy 1.4", Timing(NOW + 7))
    assert [e.Event for e in again.History].count("waiting_for_drain") == 1
    assert again.Run.Deadline == NOW + 7 + DRAIN_RECHECK_SECONDS and again.Run.HeldSince == NOW + 1


def test_a_hold_is_refused_for_a_stale_dispatch_a_claimed_run_or_an_ended_task():
    task, held, message = _held()
    claimed = claim_item(held, task, message.DispatchId, "w", Timing(NOW + 2, lease=30))
    assert isinstance(hold_item(claimed, task, message, "mod", "a", "r", Timing(NOW + 3)), Refusal)
    stale = message.model_copy(update={"DispatchId": "other"})
    assert isinstance(hold_item(held, task, stale, "mod", "a", "r", Timing(NOW + 3)), Refusal)
    ended = task.model_copy(update={"TaskStatus": TaskStatus.SUCCESS})
    assert isinstance(hold_item(held, ended, message, "mod", "a", "r", Timing(NOW + 3)), Refusal)


def test_the_sweep_re_publishes_a_held_run_soon_without_backoff_or_history():
    task, record, _ = _held()
    for now in (NOW + 6, NOW + 11, NOW + 16):
        record = expire_item(record, task, Timing(now, redeliver_after=10), counter_ids("x"), 16)
        assert isinstance(record, ItemRecord), record
        assert (record.Run.Deadline, record.Run.Redispatches) == (now + DRAIN_RECHECK_SECONDS, 0)
        assert [e.DueAt for e in record.Outbox] == [now]
        record.Outbox = []  # the flush sent it
    assert not [e for e in record.History if e.Event == "redispatched"]


def test_the_claim_after_the_undrain_releases_the_hold_naming_who_let_it_go():
    task, held, message = _held()
    asked = []

    def undrain():
        asked.append(True)
        return "bob", "1.4 is out"

    claim = claimed_releasing(lambda r: claim_item(r, task, message.DispatchId, "w", Timing(NOW + 9, lease=30)),
                              undrain, NOW + 9)
    claimed = claim(held)
    assert claimed.Run.State is RunState.RUNNING and (claimed.Run.HeldBy, claimed.Run.HeldSince) == (None, None)
    (event,) = [e for e in claimed.History if e.Event == "drain_released"]
    assert (event.Actor, event.Message) == ("bob", "module mod undrained by bob: 1.4 is out")
    assert drain_wait(task, [claimed.Run]) is None
    # A record never held asks nobody.
    fresh = new_records(_task(), 0, [0, 1, 2], Timing(NOW), counter_ids("r"), "oss")[1]
    asked.clear()
    plain = claimed_releasing(lambda r: claim_item(r, task, r.Run.DispatchId, "w", Timing(NOW + 9, lease=30)),
                              undrain, NOW + 9)(fresh)
    assert plain.Run.State is RunState.RUNNING and asked == []


def test_a_cancel_withdraws_a_held_run_and_no_drain_wait_is_left():
    task, held, _ = _held()
    going_back = task.model_copy(update={"TaskStatus": TaskStatus.ROLLING_BACK})
    cancelled = cancel_item(held, going_back, Timing(NOW + 3))
    assert cancelled.Run is None and drain_wait(going_back, []) is None


def test_a_stop_ends_a_claimed_normal_run_as_failed_and_owes_the_settling():
    task, held, message = _held()
    claimed = claim_item(held, task, message.DispatchId, "w", Timing(NOW + 2, lease=30))
    stopped = stop_item(claimed, "olga", "wrong fleet", Timing(NOW + 3))
    assert stopped.Run is None and stopped.State is StepState.FAILED and stopped.Code is ResultCode.FAILED
    assert stopped.Message == "stopped by a cancel" and stopped.Owes == [OWES_SETTLED] and not stopped.Open
    (event,) = [e for e in stopped.History if e.Event == "stopped"]
    assert (event.Actor, event.Message, event.Phase) == ("olga", "wrong fleet", Phase.NORMAL)
    assert isinstance(stop_item(held, "olga", "r", Timing(NOW + 3)), Refusal)  # nobody claimed it: a cancel's


def test_a_step_over_records_whose_every_item_in_flight_a_drain_holds_reads_waiting_as_an_inline_one():
    from common.secrets.task_views import masked_task_view

    task, held, _ = _held()
    assert task.Steps[0].Items is None and task.Steps[0].State is StepState.RUNNING
    assert masked_task_view(task, [], now=NOW + 2)["Steps"][0]["State"] == "running"  # no item found held
    shown = masked_task_view(task, [held.Run], now=NOW + 2)
    assert shown["Steps"][0]["State"] == "waiting"
    assert (shown["WaitingFor"]["Kind"], shown["WaitingFor"]["Key"]) == ("drain", "mod")
    assert task.to_doc()["Steps"][0]["State"] == "running"  # derived for the view, never stored
    # Another item claimed before the drain still runs: the step runs.
    other = new_records(task, 0, [0, 1, 2], Timing(NOW), counter_ids("o"), "oss")[1]
    claimed = claim_item(other, task, other.Run.DispatchId, "worker", Timing(NOW + 1))
    assert masked_task_view(task, [held.Run, claimed.Run], now=NOW + 2)["Steps"][0]["State"] == "running"
