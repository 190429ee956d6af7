"""Waves on a for_each step over item records (docs/design/waves.md), through the item relay on a
real SQLite store: no item of a wave is dispatched before the one before it ended and its gate
(a bake, a pause) let it through; a wave ends once and opens once; `continue` twice opens one
wave; a canary's own budget fails the step whatever the step's; a pause's timeout fails it."""

from __future__ import annotations

import time

import pytest

from common.engine.core.entries import AttemptResult, create_task
from common.engine.core.parking import act_on_step, offered_actions
from common.engine.core.units import Forbidden, Refusal, Timing
from common.engine.document import Task
from common.engine.kinds.for_each.tolerance_doc import Tolerance
from common.engine.kinds.for_each.waves.fields import BAKING, PAUSED, RUNNING, WaveSpecDoc
from common.engine.kinds.for_each.waves.sizes import wave_ends
from common.engine.kinds.kind import ActRequest
from common.engine.states import ResultCode, StepState, TaskStatus
from common.relay.items import ItemRelay
from common.store.tasks.mutate import mutate
from tests.support.builders import make_step
from tests.support.item_records import opened as _opened, relay as _relay, timing as _timing
from tests.unit.test_item_relay_races import _run, stores  # noqa: F401 (a fixture)

OK = AttemptResult(ResultCode.OK, output={"done": True})
FAILED = AttemptResult(ResultCode.FAILED, "host down", retryable=False)
OPERATOR = frozenset({"read", "submit", "operator"})


def _waves(*sizes, **gate) -> list[WaveSpecDoc]:
    return [WaveSpecDoc(Size=size, **gate) for size in sizes]


def _dispatched(items, task_id: str, count: int) -> list[int]:
    return [i for i in range(count) if items.get_item(task_id, 0, 0, i).Run is not None]


def _drive(tasks, items, task_id: str, count: int, outcomes=None) -> list[list[int]]:
    """Run the dispatched items one at a time until none is dispatched: what was in flight each time."""
    relay, seen = _relay(tasks, items), []
    for _ in range(200):
        flying = _dispatched(items, task_id, count)
        if not flying:
            return seen
        seen.append(flying)
        normal = items.get_item(task_id, 0, 0, flying[0]).Run.Phase.label == "normal"
        outcome = (outcomes or {}).get(flying[0], OK) if normal else OK  # rollbacks succeed
        relay.apply_owes(_run(tasks, items, task_id, flying[0], outcome))
    raise AssertionError("never settled")


def _continue(task_id: str, tasks, actor: str = "ann", roles=OPERATOR) -> Task | Refusal:
    """The action written as OSS writes it: one compare-and-set, read again on a lost race."""
    request = ActRequest(actor=actor, roles=roles, reason="canary looks fine", time=time.time())
    return mutate(tasks, task_id, lambda task: act_on_step(task, "each", "continue", request, _timing()))


def test_wave_ends_from_sizes():
    ends = wave_ends(_waves(1, 10, "10%", "rest"), 1000)
    assert ends == [1, 11, 111, 1000]
    assert wave_ends(_waves(2, 3), 10) == [2, 5, 8, 10]  # the last size repeats
    assert wave_ends(_waves(5, "rest"), 3) == [3]  # waves past the items are left out
    assert wave_ends(_waves("50%"), 7) == [4, 7]  # rounded up
    assert wave_ends(_waves(1), 0) == [0]


def test_no_item_of_a_wave_is_dispatched_before_the_wave_before_it_ended(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=7, parallel=2, waves=_waves(1, "50%", "rest"))  # [1, 5, 7]
    assert _dispatched(items, task.TaskId, 7) == [0]  # the canary alone, though two may run
    seen = _drive(tasks, items, task.TaskId, 7)
    for flying in seen:  # never two waves in flight at once
        assert len({0 if i < 1 else 1 if i < 5 else 2 for i in flying}) == 1, seen
        assert len(flying) <= 2
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.SUCCESS, stored.TaskMessage
    assert stored.Steps[0].Wave.Index == 2 and stored.Steps[0].Wave.Tallies == [[1, 0], [4, 0]]
    assert [e.Event for e in stored.History].count("wave_started") == 2


def test_a_paused_wave_waits_for_one_continue(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=4, parallel=4, waves=_waves(1, "rest", Pause=True))
    _drive(tasks, items, task.TaskId, 4)
    stored = tasks.get(task.TaskId)
    assert stored.Steps[0].Wave.Phase == PAUSED and _dispatched(items, task.TaskId, 4) == []
    assert [a.name for a in offered_actions(stored, 0)] == ["continue"]
    assert isinstance(_continue(task.TaskId, tasks, roles=frozenset({"read", "submit"})), Forbidden)
    first = _continue(task.TaskId, tasks)
    assert not isinstance(first, Refusal)
    tasks_now = tasks.get(task.TaskId)
    assert tasks_now.Steps[0].Wave.Index == 1 and tasks_now.Steps[0].Wave.Phase == RUNNING
    second = _continue(task.TaskId, tasks)  # read after the first: the wave is open
    assert isinstance(second, Refusal) and "waits for no continue" in second.reason
    (entry,) = [e for e in tasks_now.Outbox if e.DispatchId.endswith(":wave1")]
    _relay(tasks, items).apply(task.TaskId, entry)
    assert _dispatched(items, task.TaskId, 4) == [1, 2, 3]
    _drive(tasks, items, task.TaskId, 4)
    assert tasks.get(task.TaskId).TaskStatus is TaskStatus.SUCCESS
    events = [(e.Event, e.Actor) for e in tasks.get(task.TaskId).History if e.Event.startswith("wave_")]
    assert ("wave_continued", "ann") in events and ("wave_paused", "baton") in events


def test_a_bake_ends_at_its_stored_time_only(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=3, parallel=1, waves=_waves(1, "rest", Bake=60.0))
    _drive(tasks, items, task.TaskId, 3)
    stored = tasks.get(task.TaskId)
    wave = stored.Steps[0].Wave
    assert wave.Phase == BAKING and _dispatched(items, task.TaskId, 3) == []
    (gate,) = [e for e in stored.Outbox if e.Kind == "wave_gate"]
    assert gate.DueAt == wave.Until and wave.Until >= time.time() + 59
    _relay(tasks, items).apply(task.TaskId, gate)  # early (a repeat before its time): nothing
    assert tasks.get(task.TaskId).Steps[0].Wave.Phase == BAKING
    late = ItemRelay(tasks, items, lambda: Timing(wave.Until + 1, lease=30), lambda t: None, lambda r: None)
    late.apply(task.TaskId, gate)
    late.apply(task.TaskId, gate)  # a repeat: the wave opened once
    after = tasks.get(task.TaskId)
    assert after.Steps[0].Wave.Index == 1 and [e.Event for e in after.History].count("wave_started") == 1


def test_a_canary_budget_fails_the_step_whatever_the_steps_budget(stores):
    tasks, items = stores
    canary = WaveSpecDoc(Size=1, Tolerate=Tolerance(Count=0))
    task = _opened(tasks, items, count=5, parallel=2, waves=[canary, WaveSpecDoc(Size="rest")],
                   tolerate=Tolerance(Count=3))
    _drive(tasks, items, task.TaskId, 5, outcomes={0: FAILED})
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is not TaskStatus.SUCCESS and stored.TaskStatus is not TaskStatus.RUNNING
    assert [items.get_item(task.TaskId, 0, 0, i).State for i in range(1, 5)] == [StepState.WAITING] * 4


def test_past_the_canary_the_steps_budget_tolerates(stores):
    tasks, items = stores
    waves = [WaveSpecDoc(Size=1, Tolerate=Tolerance(Count=0)), WaveSpecDoc(Size="rest")]
    task = _opened(tasks, items, count=5, parallel=2, waves=waves, tolerate=Tolerance(Count=1))
    _drive(tasks, items, task.TaskId, 5, outcomes={3: FAILED})
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.SUCCESS and stored.FailedItems == 1


@pytest.mark.parametrize("on_timeout", ["fail", "continue"])
def test_a_pause_timeout_does_what_it_says(stores, on_timeout):
    tasks, items = stores
    waves = _waves(1, "rest", Pause=True, PauseTimeout=30.0, OnTimeout=on_timeout)
    task = _opened(tasks, items, count=3, parallel=3, waves=waves)
    _drive(tasks, items, task.TaskId, 3)
    stored = tasks.get(task.TaskId)
    (gate,) = [e for e in stored.Outbox if e.Kind == "wave_gate"]
    late = ItemRelay(tasks, items, lambda: Timing(gate.DueAt + 1, lease=30), lambda t: None, lambda r: None)
    late.apply(task.TaskId, gate)
    after = tasks.get(task.TaskId)
    if on_timeout == "fail":
        assert after.TaskStatus is not TaskStatus.RUNNING and "pause's timeout" in after.TaskMessage
    else:
        assert after.Steps[0].Wave.Index == 1 and after.TaskStatus is TaskStatus.RUNNING


def test_two_items_ending_a_wave_together_end_it_once(stores):
    """The second relay ends the wave between the first one's look-ups and its write: the first
    one's write is refused, and the next wave opens once (each of its items dispatched once)."""
    tasks, items = stores
    task = _opened(tasks, items, count=4, parallel=2, waves=_waves(2, "rest"))
    first = _run(tasks, items, task.TaskId, 0, OK)
    second = _run(tasks, items, task.TaskId, 1, OK)  # both records written before either asks
    items.between["count_by_state"] = lambda: _relay(tasks, items).apply_owes(second)
    _relay(tasks, items).apply_owes(first)
    stored = tasks.get(task.TaskId)
    events = [e.Event for e in stored.History]
    assert events.count("wave_ended") == 1 and events.count("wave_started") == 1
    assert stored.Steps[0].Wave.Index == 1 and stored.Steps[0].Wave.Tallies == [[2, 0]]
    assert _dispatched(items, task.TaskId, 4) == [2, 3]
    assert [len([e for e in items.get_item(task.TaskId, 0, 0, i).History if e.Event == "dispatched"])
            for i in (2, 3)] == [1, 1]


@pytest.mark.parametrize("status", [TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK])
def test_a_waves_check_sees_its_items_and_decides(stores, status):
    from common.engine.changes import child_finished
    from common.engine.kinds.for_each.waves.fields import CHECKING, WaveCheck

    tasks, items = stores
    waves = _waves(2, "rest", Check=WaveCheck(Module="health", Command="check_wave"))
    task = _opened(tasks, items, count=4, parallel=2, waves=waves)
    _drive(tasks, items, task.TaskId, 4)
    stored = tasks.get(task.TaskId)
    assert stored.Steps[0].Wave.Phase == CHECKING and _dispatched(items, task.TaskId, 4) == []
    (start,) = [e for e in stored.Outbox if e.Kind == "start_child"]
    assert start.Body["Steps"][0]["NormalModule"] == "health" and start.Body["Parameters"]["wave"] == 1
    assert [(i["Item"], i["Value"], i["State"]) for i in start.Body["Parameters"]["items"]] == \
        [(0, "h0", "succeeded"), (1, "h1", "succeeded")]
    body = {"TaskId": task.TaskId, "Cursor": 0, "Item": None, "ChildTaskId": start.Body["TaskId"],
            "Status": int(status), "Message": "" if status is TaskStatus.SUCCESS else "h1 unhealthy", "Output": {}}
    after = mutate(tasks, task.TaskId, lambda t: child_finished(t, body, _timing()))
    again = mutate(tasks, task.TaskId, lambda t: child_finished(t, body, _timing()))  # a repeat: refused
    assert isinstance(again, Refusal)
    if status is TaskStatus.SUCCESS:
        assert after.Steps[0].Wave.Index == 1 and after.Steps[0].Wave.Phase == RUNNING
    else:
        assert after.TaskStatus is not TaskStatus.RUNNING and "its check" in after.TaskMessage
        assert after.Steps[0].Wave.Index == 0
        assert [items.get_item(task.TaskId, 0, 0, i).State for i in (2, 3)] == [StepState.WAITING] * 2


def test_a_wave_held_by_a_failure_ends_only_once_redriven(stores):
    from common.engine.changes import redrive
    from tests.unit.test_item_budget import _act

    tasks, items = stores
    step = make_step("each")
    step.ForEach, step.MaxParallel, step.After, step.Waves, step.OnFailure = "hosts", 2, [], _waves(2, "rest"), "hold"
    task = create_task(task_type="t", steps=[step], parameters={"hosts": [f"h{i}" for i in range(5)]},
                       timing=_timing())
    tasks.insert(task)
    _relay(tasks, items).apply(task.TaskId, task.Outbox[0])
    _drive(tasks, items, task.TaskId, 5, outcomes={1: FAILED})
    held = tasks.get(task.TaskId)
    assert held.Held is not None and held.Steps[0].Wave.Index == 0 and held.Steps[0].Wave.Phase == RUNNING
    assert [items.get_item(task.TaskId, 0, 0, i).State for i in range(2, 5)] == [StepState.WAITING] * 3
    _act(tasks, items, task.TaskId, redrive)
    _drive(tasks, items, task.TaskId, 5)
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.SUCCESS, stored.TaskMessage
    assert stored.Steps[0].Wave.Tallies == [[2, 0]]  # item 1 succeeded on its redrive


def test_a_running_wave_shows_its_own_progress():
    from common.engine.kinds.for_each.waves.fields import WaveState
    from common.engine.kinds.for_each.waves.shown import describe_wave

    wave = WaveState(Ends=[1, 6, 12], Index=1, Tallies=[[1, 0]])
    counts = {"succeeded": 4, "rolled_back": 1, "running": 1, "waiting": 6}
    assert describe_wave(wave, counts) == "wave 2 of 3 (3/5 done, 1 failed; ended: 1 done)"
    paused = WaveState(Ends=[1, 12], Index=0, Phase=PAUSED, Tallies=[[1, 0]])
    assert describe_wave(paused, counts) == "wave 1 of 2 ended (waits for continue; ended: 1 done)"


def test_an_item_tolerated_in_one_wave_leaves_its_chain_going_in_the_next(stores):
    tasks, items = stores
    task = _opened(tasks, items, count=6, parallel=2, waves=_waves(2, "rest"), tolerate=Tolerance(Count=1))
    _drive(tasks, items, task.TaskId, 6, outcomes={0: FAILED})  # item 0's chain goes on with item 2, in wave 2
    stored = tasks.get(task.TaskId)
    assert stored.TaskStatus is TaskStatus.SUCCESS and stored.FailedItems == 1, stored.TaskMessage
    assert stored.Steps[0].Wave.Tallies == [[1, 1]]
