"""Property: over random DAGs of up to 8 steps (some fanning out, some without rollback, some
sub-flows), random failure points (normal or rollback phase, a step or one item) and random
delivery orders with duplicate deliveries, every task ends; every applied unit is rolled back
exactly once, in a valid reverse topological order; a unit that never ran is never rolled back;
no join is dispatched twice. The engine's real pure changes run on the real SQLite store through
common.store.tasks.mutate and the real sub-flow relay (tests/support/dag_sim.py)."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.engine.document import ChildTemplate
from common.engine.states import FINAL_STATUSES, Phase, StepState, TaskStatus
from common.store.sqlite.items import SqliteItemStore
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import Timing, create_task
from tests.support.builders import counter_ids, make_step
from tests.support.dag_sim import Simulator
from tests.support.graph_checks import join_violations, rollback_violations

_TASK_IDS = itertools.count()


@st.composite
def flows(draw):
    size = draw(st.integers(1, 8))
    steps, items = [], {}
    for index in range(size):
        step = make_step(f"s{index}", rollback=draw(st.booleans()) or draw(st.booleans()))
        step.After = sorted(draw(st.sets(st.integers(0, index - 1), max_size=3))) if index else []
        kind = draw(st.sampled_from(["plain", "plain", "for_each", "flow"]))
        if kind == "for_each":
            step.ForEach = f"list{index}"
            step.MaxParallel = draw(st.one_of(st.none(), st.integers(1, 3)))
            items[step.ForEach] = list(range(draw(st.integers(0, 3))))
        elif kind == "flow":
            step.NormalModule = step.NormalCommand = step.RollbackModule = step.RollbackCommand = None
            child = [make_step(f"c{index}_{n}", rollback=draw(st.booleans())) for n in range(draw(st.integers(1, 2)))]
            step.Flow = f"child{index}"
            step.FlowTemplate = ChildTemplate(TaskType=f"child{index}", Steps=child)
        steps.append(step)
    return steps, items


failure_points = st.sets(st.tuples(st.sampled_from(["t", "any"]), st.integers(0, 7), st.sampled_from([None, 0, 1, 2]),
                                   st.sampled_from([Phase.NORMAL, Phase.NORMAL, Phase.ROLLBACK])), max_size=3)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow, HealthCheck.large_base_example])
@given(flow=flows(), fails=failure_points, order=st.randoms(use_true_random=False))
def test_random_graphs_end_and_roll_back_in_reverse_topological_order(tmp_path, flow, fails, order):
    steps, items = flow
    store = SqliteStore(tmp_path / "prop.db")

    def failing(task_type, cursor, item, phase):
        return any(cursor == c and item in (i, None) and phase is p and (t == "any" or task_type == t)
                   for t, c, i, p in fails)

    simulator = Simulator(store, failing, SqliteItemStore(tmp_path / "prop.db"))
    task_id = f"p{next(_TASK_IDS)}"
    task = create_task(task_type="t", steps=steps, parameters=dict(items), timing=Timing(1000.0),
                       task_id=task_id, ids=counter_ids(task_id))
    simulator.submit(task)
    simulator.run(lambda n: order.randrange(n), lambda: order.random() < 0.2)
    tasks = [simulator.view(t) for t in store.list_tasks(limit=1000)
             if t.TaskId == task_id or t.TaskId.startswith(task_id + ".")]
    for done in tasks:
        assert done.TaskStatus in FINAL_STATUSES, (done.TaskId, done.TaskStatus)
        assert done.Runs == [] and done.Outbox == []
        assert rollback_violations(done) == [], done.TaskId
        assert join_violations(done) == [], done.TaskId
        if done.TaskStatus is TaskStatus.SUCCESS:
            assert all(s.State is StepState.SUCCEEDED for s in done.Steps)
            assert not any(e.Event == "rollback_succeeded" for e in done.History)
    parent = store.get(task_id)
    if parent.TaskStatus is TaskStatus.ROLLBACK_FAILED:
        assert any(a["TaskId"] == task_id for a in simulator.alarms)
    store.close()
