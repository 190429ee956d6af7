"""The CLI's text for graph tasks (oss/cli/render.py): `watch` shows the branches in flight, the
summary shows whom each step waits for, items and children; event lines name the item."""

from __future__ import annotations
import pytest

from common.secrets.task_views import masked_task
from oss.cli.render import branches_line, event_line, task_summary, waiting_line
from tests.unit.test_graph_transitions import diamond, do, fan_out, new, start
from tests.unit.test_sub_flow_transitions import sim  # noqa: F401  (a fixture)


@pytest.mark.usefixtures("inline_items")
def test_branches_in_flight_are_listed_per_step_with_their_items():
    task = do(new(diamond()), 0)
    task, _ = start(task, 1)
    assert branches_line(task) == "  in flight: b (running), c (pending)"
    fanned = do(new(fan_out(max_parallel=2), {"hosts": ["x", "y", "z"]}), 0)
    assert branches_line(fanned) == "  in flight: each[0, 1] (pending)"
    assert branches_line(do(do(do(do(new(diamond()), 0), 1), 2), 3)) == ""


@pytest.mark.usefixtures("inline_items")
def test_watch_lines_count_the_runs_of_items_kept_in_records():
    """Items kept in records have their runs out of the task document: `watch` is handed them."""
    fanned = do(new(fan_out(max_parallel=2), {"hosts": ["x", "y", "z"]}), 0)
    item_runs = list(fanned.Runs)
    bare = fanned.model_copy(update={"Runs": []})
    assert branches_line(bare) == ""
    assert branches_line(bare, item_runs) == "  in flight: each[0, 1] (pending)"
    held = item_runs[0].model_copy(update={"HeldBy": "mysql", "HeldSince": 1000.0})
    assert waiting_line(masked_task(bare, item_runs)) == ""
    assert waiting_line(masked_task(bare, [held, item_runs[1]])) == "  waiting for drain mysql since 00:16:40.000"
    assert "waiting for drain mysql" in task_summary(masked_task(bare, [held]))


@pytest.mark.usefixtures("inline_items")
def test_the_summary_shows_the_graph_and_event_lines_name_items():
    task = do(new(fan_out(), {"hosts": ["x", "y"]}), 0)
    task = do(task, 1, item=1)
    summary = task_summary(task)
    assert "items 1/2 succeeded" in summary
    diamond_summary = task_summary(new(diamond()))
    assert "after a" not in diamond_summary.splitlines()[2]  # b follows a: a line, nothing to say
    assert "after b, c" in diamond_summary.splitlines()[4]
    claimed = next(e for e in task.History if e.Event == "claimed" and e.Item == 1)
    assert " step 1 each item 1 (normal, attempt 1)" in event_line(task, claimed)


def test_the_summary_names_the_child_task_of_each_item_of_a_for_each_sub_flow(sim):
    from tests.unit.test_sub_flow_transitions import fan_out_sub_flow, run_all

    simulator = sim()
    simulator.submit(new(fan_out_sub_flow(), {"name": "n", "hosts": [f"h{i}" for i in range(5)]}, task_id="pr"))
    run_all(simulator)
    line = task_summary(simulator.store.get("pr")).splitlines()
    assert any("child tasks pr.1.0 ... pr.1.4 (5)" in row for row in line), line

