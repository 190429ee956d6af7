"""Waves over a source (docs/design/waves.md, "Waves over a source"), through the engine's changes
and the item relay on a real SQLite store: each wave's end is fixed as the pages come; a percent
wave is sized by the total the source reports, or waits (none of its items starts) for the final
count; a wave never ends before its items' pages came, and never waits for items that will not
come. Then a wave check's bounded `items`, and a cancel while a check runs."""

from __future__ import annotations

import pytest

from common.engine.core.entries import AttemptResult, create_task
from common.engine.kinds.for_each.source.fields import ItemSource
from common.engine.kinds.for_each.waves.fields import CHECKING, RUNNING, WaveCheck, WaveState
from common.engine.kinds.for_each.waves.shown import describe_wave
from common.engine.kinds.for_each.waves.sizes import OPEN_END, source_ends
from common.engine.operator.actions import cancel
from common.engine.states import ResultCode, StepState, TaskStatus
from common.store.tasks.mutate import mutate
from tests.support.builders import make_step
from tests.support.item_records import opened as _opened, relay as _relay, timing as _timing
from tests.unit.test_item_relay_races import _run, stores  # noqa: F401 (a fixture)
from tests.unit.test_item_source import _fetch
from tests.unit.test_waves import _dispatched, _drive, _waves

OK = AttemptResult(ResultCode.OK, output={"done": True})
FAILED = AttemptResult(ResultCode.FAILED, "host down", retryable=False)
HEADLINE = _waves(100, "10%", "rest")


def _ends(ends, index, fetched, total=None, done=False, waves=HEADLINE):
    return source_ends(waves, WaveState(Ends=ends, Index=index), fetched, total, done)


def test_a_waves_end_is_fixed_when_its_size_can_be_known():
    assert _ends([], 0, 0) == [100]  # a number of items: at once, before any page
    assert _ends([100], 1, 500) == [100]  # "10%" with no total and pages left: not sized yet
    assert _ends([100], 1, 500, total=100_000) == [100, 10_100]  # of the total the source reported
    assert _ends([100, 10_100], 2, 60_000) == [100, 10_100, OPEN_END]  # rest: every item that comes
    assert _ends([100], 1, 1000, done=True) == [100, 200, 1000]  # the last page: of the final count


def test_the_last_page_cuts_the_open_wave_and_fixes_the_rest():
    assert _ends([100], 0, 40, done=True) == [40]  # no wave waits for items that will not come
    assert _ends([100], 1, 100, done=True) == [100, 100]  # opened past the last item: empty, the last
    assert _ends([100, 10_100, OPEN_END], 2, 50_000, total=100_000, done=True) == [100, 10_100, 50_000]
    assert _ends([2], 1, 9, done=True, waves=_waves(2, 3)) == [2, 5, 8, 9]  # the last size repeats


def _source_step(tasks, waves, parallel=2, page_size=4, tolerate=None):
    step = make_step("each")
    step.Source, step.MaxParallel, step.After = ItemSource(Module="inv", Command="hosts", PageSize=page_size), parallel, []
    step.Waves, step.Tolerate = waves, tolerate
    task = create_task(task_type="t", steps=[step], parameters={}, timing=_timing())
    tasks.insert(task)
    return task


def _states(items, task_id, count):
    return [items.get_item(task_id, 0, 0, i).State for i in range(count)]


def _run_dispatched(tasks, items, task_id, count):
    for item in _dispatched(items, task_id, count):
        _relay(tasks, items).apply_owes(_run(tasks, items, task_id, item, OK))


def test_a_percent_wave_without_a_total_waits_for_the_last_page(stores):
    tasks, items = stores
    task = _source_step(tasks, _waves(2, "50%", "rest"))
    assert tasks.get(task.TaskId).Steps[0].Wave.Ends == [2]
    _fetch(tasks, items, task.TaskId, ["h0", "h1", "h2", "h3"], "4")
    assert _dispatched(items, task.TaskId, 4) == [0, 1]  # the first wave only
    _run_dispatched(tasks, items, task.TaskId, 4)
    wave = tasks.get(task.TaskId).Steps[0].Wave
    assert (wave.Index, wave.Phase, wave.Ends) == (1, RUNNING, [2])  # opened, not sized: 50% of what?
    assert _dispatched(items, task.TaskId, 4) == [] and _states(items, task.TaskId, 4)[2:] == [StepState.WAITING] * 2
    step = tasks.get(task.TaskId).Steps[0]
    assert describe_wave(step.Wave, None, step) == "wave 2 (waits for its source's count to be sized; ended: 2 done)"
    _fetch(tasks, items, task.TaskId, ["h4", "h5", "h6", "h7"], None)  # the last page: 8 items, 50% is 4
    stored = tasks.get(task.TaskId)
    assert stored.Steps[0].Wave.Ends == [2, 6, 8]
    assert "wave_sized" in [e.Event for e in stored.History]
    assert _dispatched(items, task.TaskId, 8) == [2, 3]  # its chains started; 6 and 7 wait for the next wave
    seen = _drive(tasks, items, task.TaskId, 8)
    assert all(i < 6 for flying in seen[:2] for i in flying), seen
    done = tasks.get(task.TaskId)
    assert done.TaskStatus is TaskStatus.SUCCESS, done.TaskMessage
    assert done.Steps[0].Wave.Tallies == [[2, 0], [4, 0]]


def test_a_total_sizes_a_percent_wave_at_once(stores):
    tasks, items = stores
    task = _source_step(tasks, _waves(2, "50%", "rest"))
    outcome = AttemptResult(ResultCode.OK, output={"items": ["h0", "h1", "h2", "h3"], "next": "4", "total": 10})
    _fetch(tasks, items, task.TaskId, [], None, result=outcome)
    _run_dispatched(tasks, items, task.TaskId, 4)
    wave = tasks.get(task.TaskId).Steps[0].Wave
    assert wave.Ends == [2, 7] and _dispatched(items, task.TaskId, 4) == [2, 3]  # 50% of 10, from item 2


def test_a_wave_does_not_end_before_its_items_pages_came(stores):
    tasks, items = stores
    task = _source_step(tasks, _waves(4, "rest"), page_size=2)
    _fetch(tasks, items, task.TaskId, ["h0", "h1"], 2)
    _run_dispatched(tasks, items, task.TaskId, 2)
    assert tasks.get(task.TaskId).Steps[0].Wave.Index == 0  # items 2 and 3 are still to come
    _fetch(tasks, items, task.TaskId, ["h2", "h3"], 4)
    assert _dispatched(items, task.TaskId, 4) == [2, 3]
    _run_dispatched(tasks, items, task.TaskId, 4)
    assert tasks.get(task.TaskId).Steps[0].Wave.Index == 1
    _fetch(tasks, items, task.TaskId, ["h4"], None)
    _drive(tasks, items, task.TaskId, 5)
    done = tasks.get(task.TaskId)
    assert done.TaskStatus is TaskStatus.SUCCESS and done.Steps[0].Wave.Ends == [4, 5], done.TaskMessage


def test_a_wave_longer_than_the_source_ends_at_its_last_item(stores):
    tasks, items = stores
    task = _source_step(tasks, _waves(5, "rest"))
    _fetch(tasks, items, task.TaskId, ["h0", "h1", "h2"], None)
    _drive(tasks, items, task.TaskId, 3)
    done = tasks.get(task.TaskId)
    assert done.TaskStatus is TaskStatus.SUCCESS, done.TaskMessage
    assert done.Steps[0].Wave.Ends == [3] and done.Steps[0].ItemCount == 3


def test_a_wave_ending_where_the_items_so_far_end_and_an_empty_last_page(stores):
    tasks, items = stores
    task = _source_step(tasks, _waves(2, "rest"), page_size=2)
    _fetch(tasks, items, task.TaskId, ["h0", "h1"], 2)
    _run_dispatched(tasks, items, task.TaskId, 2)
    assert tasks.get(task.TaskId).Steps[0].Wave.Index == 1  # pages are left: not the last wave
    _fetch(tasks, items, task.TaskId, [], None)  # none came: the open wave is empty, the last
    done = tasks.get(task.TaskId)
    assert done.TaskStatus is TaskStatus.SUCCESS, done.TaskMessage
    assert done.Steps[0].Wave.Ends == [2, 2]


def test_a_waves_check_is_given_at_most_its_bound_the_failed_items_first(stores, monkeypatch):
    from common.relay import item_waves
    from common.engine.kinds.for_each.tolerance_doc import Tolerance

    monkeypatch.setattr(item_waves, "CHECK_ITEMS", 3)
    tasks, items = stores
    waves = _waves(5, "rest", Check=WaveCheck(Module="health", Command="check_wave"))
    task = _opened(tasks, items, count=8, parallel=2, waves=waves, tolerate=Tolerance(Count=1))
    _drive(tasks, items, task.TaskId, 8, outcomes={4: FAILED})
    stored = tasks.get(task.TaskId)
    assert stored.Steps[0].Wave.Phase == CHECKING
    (start,) = [e for e in stored.Outbox if e.Kind == "start_child"]
    given = start.Body["Parameters"]
    assert [i["Item"] for i in given["items"]] == [4, 0, 1]  # the failed one first, then in item order
    assert given["item_count"] == 5 and given["items_truncated"] is True
    assert (given["done"], given["failed"], given["waves"]) == (4, 1, 2)
    assert given["items_page"] == {"task": task.TaskId, "step": "each", "after": None, "until": 5}


def _checking(tasks, items):
    waves = _waves(2, "rest", Check=WaveCheck(Module="health", Command="check_wave"))
    task = _opened(tasks, items, count=4, parallel=2, waves=waves)
    _drive(tasks, items, task.TaskId, 4)
    assert tasks.get(task.TaskId).Steps[0].Wave.Phase == CHECKING
    return task


@pytest.mark.parametrize("stop_running", [False, True])
def test_a_cancel_while_a_check_runs_cancels_the_check(stores, stop_running):
    tasks, items = stores
    task = _checking(tasks, items)
    after = mutate(tasks, task.TaskId, lambda t: cancel(t, "ann", "bad day", _timing(), stop_running=stop_running))
    (entry,) = [e for e in after.Outbox if e.Kind == "cancel_child"]
    assert entry.Body["TaskId"] == f"{task.TaskId}.0.wave1" and entry.Body["Actor"] == "ann"
    assert entry.Body.get("StopRunning", False) is stop_running
    assert [e.Event for e in after.History].count("wave_check_cancelled") == 1
    assert after.TaskStatus is TaskStatus.ROLLING_BACK  # the check has nothing to undo: nothing waits for it


def test_a_rest_waves_own_budget_while_its_source_pages_is_of_what_is_known():
    from common.engine.kinds.for_each.source.fields import SourcePaging
    from common.engine.kinds.for_each.tolerance_doc import Tolerance
    from common.engine.kinds.for_each.budget import refuses_place
    from common.engine.kinds.for_each.waves.budget import wave_budget

    step = make_step("each")
    step.Waves = [*_waves(2), *_waves("rest", Tolerate=Tolerance(Percent=10))]
    step.Wave = WaveState(Ends=[2, OPEN_END], Index=1)
    step.Paging = SourcePaging(Fetched=22)
    assert wave_budget(step, 5)[1:] == (2, 22)  # 10 % of the 20 known so far: 2 places
    assert refuses_place(step, 5, [3]) is None and "wave's budget" in refuses_place(step, 5, [3, 4])
    step.Paging.Total = 102
    assert wave_budget(step, 5)[1:] == (2, 102)  # of the total the source reported
