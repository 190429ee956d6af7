"""A rolling upgrade replaces processes one by one: while it runs, the previous release's modules
read task documents and step messages the new code wrote. Its models forbid unknown fields, so
every field added since must be left out while it has its default (tests/contract/previous_release/).
The release is the commit tests/support/previous_release.py pins."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from fastapi.testclient import TestClient

from tests.api.support import FAIL, Api, open_api
from tests.support.previous_release import RELEASE

SCHEMAS = json.loads((Path(__file__).parent / "previous_release" / "documents.schema.json").read_text())


def _validator(name: str) -> Any:
    return jsonschema_rs.validator_for(SCHEMAS[name])


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Task documents in the shapes a module meets: new, claimed, failed and rolled back, a
    rollback that failed, cancelled while running."""
    app, store, broker = open_api(tmp_path_factory.mktemp("previous"))
    with TestClient(app) as client:
        api = Api(client, store, broker)
        claimed = api.create()["task_id"]
        api.step(claimed, finish=False)
        cancelled = api.create()["task_id"]
        api.step(cancelled, finish=False)
        assert api.act(cancelled, "cancel").status_code in (200, 202)
        failing = api.create()["task_id"]
        api.step(failing)
        api.step(failing, FAIL)
        ids = [api.create()["task_id"], claimed, cancelled, failing, api.rolled_back(), api.rollback_failed()]
        documents = [json.loads(store.get(task_id).to_json()) for task_id in ids]  # type: ignore[union-attr]
    store.close()
    broker.close()
    return documents


def test_the_previous_release_reads_every_task_document_written_now(written: list[dict[str, Any]]) -> None:
    validator = _validator("Task")
    for document in written:
        errors = [f"{'/'.join(map(str, error.instance_path))}: {error.message}" for error in validator.iter_errors(document)]
        assert errors == [], f"task {document['TaskId']} ({document['TaskStatus']})"


def test_the_previous_release_reads_every_step_message_written_now(written: list[dict[str, Any]]) -> None:
    validator = _validator("StepMessage")
    bodies = [entry["Body"] for document in written for entry in document["Outbox"]
              if entry["Kind"] == "publish" and "DispatchId" in entry["Body"]]
    assert bodies, "no step message in the outbox of any document"
    for body in bodies:
        message = {"Parameters": {}, **body}  # the publisher adds the task's parameters
        errors = [f"{'/'.join(map(str, error.instance_path))}: {error.message}" for error in validator.iter_errors(message)]
        assert errors == [], body


def test_the_check_can_fail() -> None:
    # A field the previous release does not know is caught, so the checks above mean something.
    assert _validator("Task").is_valid(_minimal_task())
    assert not _validator("Task").is_valid({**_minimal_task(), "FieldOfANewerRelease": None})


def test_the_schema_is_the_pinned_release_s() -> None:
    # Moving the pin without regenerating the schema would check against the wrong release.
    assert SCHEMAS["release"] == RELEASE, "regenerate it: python -m tests.support.previous_release (its docstring)"


def _minimal_task() -> dict[str, Any]:
    return {name: _example(spec) for name, spec in SCHEMAS["Task"]["properties"].items() if name in SCHEMAS["Task"].get("required", [])}


def _example(spec: dict[str, Any]) -> Any:
    return {"string": "x", "integer": 0, "number": 0.0, "array": [], "object": {}, "boolean": False}.get(spec.get("type", "string"), "x")


def test_a_fan_out_without_a_budget_or_a_hold_is_written_as_the_previous_release_reads_it() -> None:
    # A for_each step's Tolerate, OnFailure and FailedItems and the task's FailedItems and Held
    # are left out while unset (docs/design/item-records.md): only a flow that uses them needs
    # every process upgraded first.
    from common.engine.core.entries import Timing, create_task
    from common.engine.kinds.for_each.fields import Tolerance
    from tests.support.builders import make_step

    step = make_step("each")
    step.ForEach, step.MaxParallel, step.After = "hosts", 2, []
    task = create_task(task_type="t", steps=[step], parameters={"hosts": ["a", "b", "c"]}, timing=Timing(100.0))
    document = json.loads(task.to_json())
    assert "Tolerate" not in document["Steps"][0] and "FailedItems" not in document and "Held" not in document
    assert _validator("Task").is_valid(document)
    task.Steps[0].Tolerate = Tolerance(Count=1)
    assert _validator("Task").is_valid(json.loads(task.to_json()))  # the previous release has budgets
