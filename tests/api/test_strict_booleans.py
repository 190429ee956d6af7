"""A boolean in a request body is a JSON boolean: `"yes"`, `"1"`, `"false"`, `1` are refused with
422 naming the field, never read as true (or as false), and nothing is written. Every body
model of every route is walked, so a new boolean field is held to it too."""

from __future__ import annotations

import importlib
import pkgutil
import typing
from collections.abc import Iterator

import pytest
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError

import oss.api.routers
from tests.api.support import SUBMITTER, Api, auth

NOT_BOOLEANS = ["yes", "1", "true", "false", "0", 1, 0]


def _models(annotation: object, seen: set[type]) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return
        seen.add(annotation)
        yield annotation
        for field in annotation.model_fields.values():
            yield from _models(field.annotation, seen)
    for argument in typing.get_args(annotation):
        yield from _models(argument, seen)


def body_booleans() -> list[tuple[str, str, object]]:
    """(route, model.field, the field's validator) of every boolean in a request body."""
    found, seen = [], set()
    for info in pkgutil.iter_modules(oss.api.routers.__path__):
        module = importlib.import_module(f"oss.api.routers.{info.name}")
        for route in module.router.routes:
            if not isinstance(route, APIRoute) or route.body_field is None:
                continue
            for model in _models(route.body_field.field_info.annotation, seen):
                for name, field in model.model_fields.items():
                    if bool in (field.annotation, *typing.get_args(field.annotation)):
                        annotated = typing.Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation
                        found.append((route.path, f"{model.__name__}.{name}", TypeAdapter(annotated)))
    return found


def test_every_boolean_of_every_request_body_takes_json_booleans_only():
    found = body_booleans()
    assert {"CreateTask.dry_run", "CancelAction.stop_running", "Migration.dry_run"} <= {f for _, f, _ in found}
    lax = []
    for path, field, adapter in found:
        for value in NOT_BOOLEANS:
            try:
                adapter.validate_python(value)
            except ValidationError:
                continue
            lax.append((path, field, value))
    assert lax == []


@pytest.mark.parametrize("value", ["yes", "1", "false", "true", 1, 0])
def test_a_dry_run_that_is_not_a_json_boolean_is_refused_and_creates_nothing(api: Api, value: object):
    response = api.client.post("/api/v1/tasks", headers=auth(SUBMITTER),
                               json={"task_type": "create_db", "parameters": {"name": "db1"}, "dry_run": value})  # fmt: skip
    assert response.status_code == 422, response.text
    assert [f["path"] for f in response.json()["error"]["fields"]] == ["dry_run"], response.text
    assert api.store.list_tasks(limit=10) == []
    dry = api.client.post("/api/v1/tasks", headers=auth(SUBMITTER),
                          json={"task_type": "create_db", "parameters": {"name": "db1"}, "dry_run": True})  # fmt: skip
    assert dry.status_code == 200 and api.store.list_tasks(limit=10) == []
