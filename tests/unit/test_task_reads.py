"""How a stored task document becomes a Task: the fast path for today's documents, a slower one
for format 1's, and the same errors for a broken one."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from common.engine.document import Step, Task
from common.engine.core.entries import Timing, create_task
from tests.support.builders import make_step


def new(steps: list[Step]) -> Task:
    return create_task(task_type="t", steps=steps, parameters={}, timing=Timing(100.0))


def _format_1_json(task: Task) -> str:
    doc = task.to_doc()
    doc["Active"] = doc.pop("Runs")[0]
    for step in doc["Steps"]:
        step.pop("After")
    return json.dumps(doc)


def test_a_format_1_document_in_a_sqlite_row_loads_with_its_run_and_graph():
    task = new([make_step("a"), make_step("b")])
    old = Task.from_json(_format_1_json(task))
    assert [r.DispatchId for r in old.Runs] == [task.Runs[0].DispatchId]
    assert [s.After for s in old.Steps] == [[], [0]]


def test_a_broken_document_still_fails_as_a_validation_error_naming_its_field():
    text = new([make_step("a")]).to_json().replace('"TaskType":"', '"TaskType":1,"Bogus":"', 1)
    with pytest.raises(ValidationError, match="Bogus"):
        Task.from_json(text)
    with pytest.raises(ValidationError, match="json"):
        Task.from_json("{not json")
    with pytest.raises(ValidationError):  # Active, but broken anyway: the upgraded copy's error
        Task.from_json(json.dumps({"Active": None, "TaskId": "t"}))


def test_a_shared_step_without_after_is_not_edited_by_the_task_that_uses_it():
    template = Step(Name="b", NormalModule="m", NormalCommand="c")
    task = Task(TaskId="t", TaskType="x", TimeCreate=0.0, Steps=[make_step("a"), template])
    assert task.Steps[1].After == [0]
    assert template.After is None


def test_no_model_validator_runs_before_validation():
    """Why this is a test: a `before` model validator makes pydantic turn the whole JSON text
    into Python objects before validating it, which doubles the cost of every task read (each
    step's claim reads one). Format 1 documents are upgraded by the readers instead."""
    for model in (Task, Step):
        modes = [d.info.mode for d in model.__pydantic_decorators__.model_validators.values()]
        assert "before" not in modes and "wrap" not in modes, model.__name__
