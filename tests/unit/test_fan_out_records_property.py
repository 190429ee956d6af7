"""Property: a for_each step over item records (docs/design/item-records.md) gives the outcomes the
inline items give, on random graphs (some steps fanning out with random max_parallel, some without
rollback, some sub-flows), random normal-phase failures and random delivery orders with
duplicates: the same final status, the same gathered outputs when it succeeds, and in both every
applied unit rolled back exactly once, in reverse topological order, and no join dispatched
twice. Both run the engine's real changes on the real SQLite stores (tests/support/dag_sim.py)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.engine.kinds.for_each import records as fan_out
from common.engine.states import FINAL_STATUSES, Phase, StepState, TaskStatus
from common.engine.core.entries import Timing, create_task
from common.store.sqlite.items import SqliteItemStore
from common.store.sqlite.tasks import SqliteStore
from tests.support.builders import counter_ids, make_step
from tests.support.dag_sim import Simulator
from tests.support.graph_checks import join_violations, rollback_violations

_RUNS = itertools.count()


@st.composite
def fan_out_flows(draw):
    size = draw(st.integers(1, 6))
    steps, lists = [], {}
    for index in range(size):
        step = make_step(f"s{index}", rollback=draw(st.booleans()) or draw(st.booleans()))
        step.After = sorted(draw(st.sets(st.integers(0, index - 1), max_size=2))) if index else []
        if draw(st.booleans()):
            step.ForEach = f"list{index}"
            step.MaxParallel = draw(st.one_of(st.none(), st.integers(1, 3)))
            lists[step.ForEach] = list(range(draw(st.integers(0, 6))))
        steps.append(step)
    return steps, lists


failures = st.sets(st.tuples(st.integers(0, 5), st.sampled_from([None, 0, 1, 2, 5])), max_size=2)


def _run(tmp_path, steps, lists, fails, seed: int, records: bool, monkeypatch):
    monkeypatch.setattr(fan_out, "RECORDS_ENABLED", records)
    path = tmp_path / f"run{next(_RUNS)}.db"
    store = SqliteStore(path)
    failing = lambda task_type, cursor, item, phase: phase is Phase.NORMAL and any(  # noqa: E731
        cursor == c and item in (i, None) for c, i in fails)
    simulator = Simulator(store, failing, SqliteItemStore(path))
    task = create_task(task_type="t", steps=[s.model_copy(deep=True) for s in steps], parameters=dict(lists),
                       timing=Timing(1000.0), task_id="p", ids=counter_ids("p"))
    simulator.submit(task)
    order = random.Random(seed)
    simulator.run(lambda n: order.randrange(n), lambda: order.random() < 0.2)
    done = simulator.view(store.get("p"))
    kept_records = any(fan_out.keeps_records(s) for s in store.get("p").Steps)
    store.close()
    return done, kept_records


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(flow=fan_out_flows(), fails=failures, seed=st.integers(0, 2**16))
def test_item_records_give_the_outcomes_of_inline_items(tmp_path, monkeypatch, flow, fails, seed):
    steps, lists = flow
    inline, used_records = _run(tmp_path, steps, lists, fails, seed, False, monkeypatch)
    assert not used_records
    over_records, _ = _run(tmp_path, steps, lists, fails, seed, True, monkeypatch)
    for done in (inline, over_records):
        assert done.TaskStatus in FINAL_STATUSES
        assert done.Runs == [] and done.Outbox == []
        assert rollback_violations(done) == []
        assert join_violations(done) == []
    assert over_records.TaskStatus is inline.TaskStatus
    assert over_records.TaskStatus in (TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK)  # no rollback fails here
    if inline.TaskStatus is TaskStatus.SUCCESS:
        assert over_records.Parameters == inline.Parameters
        assert all(s.State is StepState.SUCCEEDED for s in over_records.Steps)


@pytest.mark.parametrize("max_parallel", [None, 1, 3])
def test_a_large_fan_out_over_records_ends_with_every_output_in_item_order(tmp_path, monkeypatch, max_parallel):
    step = make_step("each", rollback=True)
    step.ForEach, step.MaxParallel, step.After = "hosts", max_parallel, []
    done, used_records = _run(tmp_path, [step], {"hosts": list(range(40))}, set(), 7, True, monkeypatch)
    assert used_records
    assert done.TaskStatus is TaskStatus.SUCCESS
    assert done.Parameters["each"] == [{"out_0": index} for index in range(40)]
