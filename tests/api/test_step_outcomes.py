"""The task view of a for_each step and of a sub-flow step (docs/design/task-document.md, "Units"):
the API shows the step-level outcome a plain step has (when it started and ended, how it ended,
attempts, its rollback), derived from the items, for a document written before that derivation too;
the event stream's task carries the same. Tasks run by the real transitions on the API's own
store."""

from __future__ import annotations
import pytest

import json
import sqlite3

from common.engine.states import Phase, ResultCode
from tests.api.support import auth
from tests.support.builders import make_step
from tests.support.dag_sim import Simulator
from tests.unit.test_graph_transitions import fan_out, new
from tests.unit.test_sub_flow_transitions import sub_flow_step

OUTCOME = ("Code", "Message", "TimeStart", "TimeEnd", "Attempts",
           "RollbackCode", "RollbackTimeStart", "RollbackTimeEnd", "RollbackAttempts")


def rolled_back_fan_out(api, task_id: str) -> None:
    simulator = Simulator(api.store, lambda t, cursor, item, phase: cursor == 1 and item == 5 and phase is Phase.NORMAL)
    simulator.submit(new(fan_out(max_parallel=4), {"hosts": [f"h{i}" for i in range(20)]}, task_id=task_id))
    simulator.run(lambda n: 0)


def shown_step(api, task_id: str, cursor: int) -> dict:
    response = api.get(f"/api/v1/tasks/{task_id}")
    assert response.status_code == 200, response.text
    return response.json()["Steps"][cursor]


@pytest.mark.usefixtures("inline_items")
def test_a_rolled_back_for_each_step_shows_its_outcome(api):
    rolled_back_fan_out(api, "fe20")
    step = shown_step(api, "fe20", 1)
    ran = [i for i in step["Items"] if i["Attempts"]]
    assert step["State"] == "rolled_back" and len(step["Items"]) == 20
    assert (step["Code"], step["Message"]) == (ResultCode.FAILED, "item 5: planned failure")
    assert step["TimeStart"] == min(i["TimeStart"] for i in ran)
    assert step["TimeEnd"] == max(i["TimeEnd"] for i in ran)
    assert step["Attempts"] == step["RollbackAttempts"] == len(ran)
    assert step["RollbackTimeStart"] == min(i["RollbackTimeStart"] for i in ran)
    assert step["RollbackTimeEnd"] == max(i["RollbackTimeEnd"] for i in ran)
    assert step["RollbackCode"] == ResultCode.OK


@pytest.mark.usefixtures("inline_items")
def test_a_document_stored_without_the_outcome_is_shown_with_it(api, tmp_path):
    rolled_back_fan_out(api, "old20")
    derived = {k: shown_step(api, "old20", 1)[k] for k in OUTCOME}
    assert derived["Code"] == ResultCode.FAILED and derived["RollbackTimeEnd"] is not None
    # As a document written before the derivation has it: the step's own fields left empty.
    conn = sqlite3.connect(tmp_path / "api.db")
    doc = json.loads(conn.execute("SELECT doc FROM tasks WHERE task_id = 'old20'").fetchone()[0])
    doc["Steps"][1].update(Code=None, TimeEnd=None, Attempts=0, RollbackTimeStart=None, RollbackTimeEnd=None,
                           RollbackCode=None, RollbackAttempts=0)
    with conn:
        conn.execute("UPDATE tasks SET doc = ? WHERE task_id = 'old20'", (json.dumps(doc),))
    conn.close()
    assert {k: shown_step(api, "old20", 1)[k] for k in OUTCOME} == derived


def test_a_sub_flow_step_that_ran_shows_its_start_and_attempts(api):
    simulator = Simulator(api.store, lambda t, cursor, item, phase: t == "t" and cursor == 1 and phase is Phase.NORMAL)
    simulator.submit(new([sub_flow_step("sub", [make_step("x")]), make_step("z")], {"name": "n"}, task_id="sub1"))
    simulator.run(lambda n: 0)
    step = shown_step(api, "sub1", 0)
    assert step["ChildTaskId"] == "sub1.0" and step["State"] == "rolled_back"
    assert step["Attempts"] == 1 and step["Code"] == ResultCode.OK
    assert step["TimeStart"] is not None and step["TimeStart"] <= step["TimeEnd"]
    assert step["RollbackAttempts"] == 1 and step["RollbackTimeStart"] <= step["RollbackTimeEnd"]


@pytest.mark.usefixtures("inline_items")
def test_the_event_stream_carries_the_same_step_outcome(api):
    rolled_back_fan_out(api, "ev20")
    expected = {k: shown_step(api, "ev20", 1)[k] for k in OUTCOME}
    assert expected["Code"] == ResultCode.FAILED and expected["Attempts"] > 1
    with api.client.stream("GET", "/api/v1/tasks/ev20/events", headers=auth()) as response:
        assert response.status_code == 200
        task = None
        for line in response.iter_lines():
            if line.startswith("event: task"):
                task = "next"
            elif task == "next" and line.startswith("data: "):
                task = json.loads(line[len("data: "):])
                break
    assert {k: task["Steps"][1][k] for k in OUTCOME} == expected
