"""Operator actions on the items of a for_each step kept over records
(docs/design/operator-actions.md and docs/design/item-records.md, "What still holds"): skip of one
item that keeps failing, pause and resume, cancel, retry and compensation of failed item rollbacks.
Each goes through the OSS's own action shell (oss.services.actions.OperatorActions) on a real SQLite store,
with the engine's real changes and item relay playing the modules and the broker
(tests/support/dag_sim.py); the outcomes are read from the stored task and records."""

from __future__ import annotations

import pytest

from common.engine.kinds.for_each import records as fan_out_kind
from common.engine.kinds.for_each.item_actions import republish_pending
from common.engine.states import Phase, RunState, StepState, TaskStatus
from common.engine.core.entries import Timing
from common.errors import ActionRefused
from common.store.sqlite.items import SqliteItemStore
from common.store.sqlite.tasks import SqliteStore
from oss.services.actions import OperatorActions
from tests.support.dag_sim import Simulator
from tests.unit.test_graph_transitions import fan_out, new

ITEMS = 12
CHAINS = 3


class _Publisher:
    """What OperatorActions publishes through, wired to the simulator's 'broker' and relay."""

    def __init__(self, simulator: Simulator):
        self.flush, self.items, self.item_store = simulator.flush, simulator.item_relay, simulator.items


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setattr(fan_out_kind, "RECORDS_ENABLED", True)
    store = SqliteStore(tmp_path / "t.db")
    failing: set[tuple[int | None, Phase]] = set()  # (item, phase) of step 1 that fails, every attempt
    simulator = Simulator(store, lambda t, cursor, item, phase: cursor == 1 and (item, phase) in failing,
                          SqliteItemStore(tmp_path / "t.db"))
    steps = fan_out(max_parallel=CHAINS)
    steps[1].NormalRetry = 3
    simulator.submit(new(steps, {"hosts": [f"h{i}" for i in range(ITEMS)]}, task_id="t"))
    actions = OperatorActions(store, _Publisher(simulator), lambda: simulator.now, 60.0)  # type: ignore[arg-type]
    yield simulator, actions, failing
    store.close()


def records(simulator: Simulator) -> list:
    task = simulator.store.get("t")
    return simulator.items.page_items("t", task.Generation, 1, limit=500)


def run_until(simulator: Simulator, condition, limit: int = 5000) -> None:
    for _ in range(limit):
        if condition():
            return
        assert simulator.pending(), "nothing left to do and the condition never held"
        simulator.step(0)
    raise AssertionError("the condition never held")


def test_skip_of_an_item_that_keeps_failing_passes_it_and_its_chain_goes_on(world):
    simulator, actions, failing = world
    failing.add((4, Phase.NORMAL))
    run_until(simulator, lambda: any(r.Item == 4 and r.Code is not None and r.State is StepState.RUNNING
                                     for r in records(simulator)))
    with pytest.raises(ActionRefused, match="has not failed an attempt"):
        actions.apply("skip", "t", "olga", "it is fine", unit=(1, 0))  # succeeded already (or running fine)
    with pytest.raises(ValueError, match="item 99"):
        actions.apply("skip", "t", "olga", "no such item", unit=(1, 99))
    task = actions.apply("skip", "t", "olga", "host 4 is gone", unit=(1, 4))
    assert task.History[-1].Event == "operator_skipped" and task.History[-1].Item == 4
    simulator.run(lambda n: 0)
    done = simulator.store.get("t")
    assert done.TaskStatus is TaskStatus.SUCCESS
    states = {r.Item: r.State for r in records(simulator)}
    assert states[4] is StepState.OPERATOR_SKIPPED
    assert all(states[i] is StepState.SUCCEEDED for i in range(ITEMS) if i != 4)  # 7 and 10 after it in its chain
    assert "skipped by olga: host 4 is gone" == next(r for r in records(simulator) if r.Item == 4).Message


def test_pending_items_stay_pending_while_paused_and_resume_starts_what_was_held(world):
    simulator, actions, _ = world
    run_until(simulator, lambda: sum(r.State is StepState.SUCCEEDED for r in records(simulator)) >= 2)
    actions.apply("pause", "t", "olga", "maintenance window")
    simulator.run(lambda n: 0)  # every delivery refused, every claimed item finishes
    held = records(simulator)
    waiting = [r.Item for r in held if r.State is StepState.WAITING]
    pending = [r for r in held if r.Run is not None and r.Run.State is RunState.PENDING]
    assert waiting and simulator.refused >= len(pending)
    assert all(r.State is StepState.RUNNING for r in pending)  # not cancelled: still due
    assert simulator.store.get("t").TaskStatus is TaskStatus.RUNNING
    actions.apply("resume", "t", "olga", "window over")
    for record in pending:  # the broker dropped them with the refused claims: delivered again
        simulator._seen.discard(record.Run.DispatchId)
        simulator.flush_item(record)
    simulator.run(lambda n: 0)
    assert simulator.store.get("t").TaskStatus is TaskStatus.SUCCESS
    assert {r.State for r in records(simulator)} == {StepState.SUCCEEDED}


def test_resume_publishes_again_a_dispatch_whose_claim_a_pause_refused():
    from common.engine.kinds.for_each.item_record import ItemRecord
    from common.engine.document import Run

    task = new(fan_out(max_parallel=2), {"hosts": ["a", "b"]}, task_id="r")
    run = Run(Cursor=1, Item=0, Phase=Phase.NORMAL, Attempt=1, DispatchId="d-1", Deadline=1100.0)
    published = ItemRecord(TaskId="r", Cursor=1, Item=0, State=StepState.RUNNING, Run=run)  # its entry went out
    again = republish_pending(published, task, Timing(1050.0, redeliver_after=60.0))
    assert [e.DispatchId for e in again.Outbox] == ["d-1"] and again.Outbox[0].DueAt == 1050.0
    assert again.Run.Deadline == 1110.0
    assert "backoff" in republish_pending(again, task, Timing(1040.0)).reason  # its entry is still to go


def test_cancel_stops_dispatching_items_and_rolls_back_what_ran(world):
    simulator, actions, _ = world
    run_until(simulator, lambda: sum(r.State is StepState.SUCCEEDED for r in records(simulator)) >= 4)
    actions.apply("cancel", "t", "olga", "wrong region")
    simulator.run(lambda n: 0)
    done = simulator.store.get("t")
    assert done.TaskStatus is TaskStatus.ROLLED_BACK
    states = [r.State for r in records(simulator)]
    assert StepState.WAITING in states  # never started
    assert not {StepState.SUCCEEDED, StepState.FAILED, StepState.RUNNING} & set(states)  # every applied one undone
    assert all(r.RollbackAttempts == 1 for r in records(simulator) if r.State is StepState.ROLLED_BACK)


@pytest.mark.parametrize("action", ["retry-rollback", "compensate"])
def test_a_failed_item_rollback_is_retried_or_compensated_and_the_rollback_finishes(world, action):
    simulator, actions, failing = world
    failing |= {(7, Phase.NORMAL), (2, Phase.ROLLBACK)}
    simulator.run(lambda n: 0)
    task = simulator.store.get("t")
    assert task.TaskStatus is TaskStatus.ROLLBACK_FAILED and task.Steps[1].State is StepState.ROLLBACK_FAILED
    assert task.Steps[0].State is StepState.SUCCEEDED  # nothing before it is undone while it failed
    stuck = [r.Item for r in records(simulator) if r.State in (StepState.SUCCEEDED, StepState.FAILED)]
    failing.discard((2, Phase.ROLLBACK))
    actions.apply(action, "t", "olga", "fixed by hand" if action == "compensate" else "the host is back")
    simulator.run(lambda n: 0)
    done = simulator.store.get("t")
    assert done.TaskStatus is TaskStatus.ROLLED_BACK, done.TaskMessage
    assert done.Steps[0].State is StepState.ROLLED_BACK and done.Steps[1].State is StepState.ROLLED_BACK
    item2 = next(r for r in records(simulator) if r.Item == 2)
    assert item2.State is (StepState.COMPENSATED if action == "compensate" else StepState.ROLLED_BACK)
    assert all(r.State is StepState.ROLLED_BACK and r.RollbackAttempts == 1
               for r in records(simulator) if r.Item in stuck)  # the chains the failure held back
    with pytest.raises(ActionRefused):
        actions.apply(action, "t", "olga", "again")
