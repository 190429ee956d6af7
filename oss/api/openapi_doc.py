"""The OpenAPI document: FastAPI's, completed with what only this deployment knows.

- The body of `POST /tasks` is one of the task types of the loaded flows.yaml: a `oneOf` with a
  discriminator on `task_type`, each variant holding that type's parameter schema. A client
  (or a fuzzer) that follows the document is never refused for its parameters.
- Every answer the API can give is documented on every operation: the body limit (413) and the
  refusal of unknown query parameters (422) apply to every request, whatever its route.
- Links say where the ids an answer carries can be used (`task_id` after a create), so a
  stateful client can chain the calls.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from common.flows import FlowCatalog
from common.flows.json_schema import STORED_JSON, parameters_json_schema, stored_json_schema
from oss.api.routers.callbacks import document_callback_body

_ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}
_EVERYWHERE = {
    "413": "The body is over the limit (BATON_MAX_BODY_BYTES)",
    "422": "The request is not valid, an unknown query parameter included (fields say where)",
}
_TASK_ACTIONS = ("cancel", "retry", "retry-rollback", "compensate")


def install_openapi(app: FastAPI, flows: FlowCatalog, max_string: int) -> None:
    """`max_string`: the input limits' longest string (BATON_INPUT_MAX_STRING)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title, version=app.version, summary=app.summary, routes=app.routes
            )
            document["components"]["schemas"][STORED_JSON] = stored_json_schema(max_string)
            document_callback_body(document, max_string)
            for body in ("CreateTask", "CreateSchedule"):
                per_task_type_bodies(document, flows, body)
            document_every_answer(document)
            add_links(document)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def per_task_type_bodies(document: dict[str, Any], flows: FlowCatalog, body: str = "CreateTask") -> None:
    """`body` (a component holding `task_type` and `parameters`) becomes a oneOf of
    <body>_<type>, one per task type, discriminated by `task_type`."""
    schemas = document["components"]["schemas"]
    base = schemas.get(body)
    names = list(flows.task_types)
    if base is None or not names:
        return
    variants: dict[str, str] = {}
    for name in names:
        variant = copy.deepcopy(base)
        variant["title"] = f"{base.get('title', body)}: {name}"
        variant["properties"]["task_type"] = {"type": "string", "const": name, "enum": [name]}
        flow = flows.get(name)
        variant["properties"]["parameters"] = parameters_json_schema(flow.parameter_schema, flow.lock_parameters)
        if "required" in variant["properties"]["parameters"]:
            variant["required"] = sorted({*variant.get("required", []), "parameters"})
        key = f"{body}_" + re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        schemas[key] = variant
        variants[name] = f"#/components/schemas/{key}"
    schemas[body] = {
        "title": body,
        "description": "One of the task types flows.yaml defines (GET /task-types), with its parameters.",
        "oneOf": [{"$ref": ref} for ref in variants.values()],
        "discriminator": {"propertyName": "task_type", "mapping": variants},
    }


def document_every_answer(document: dict[str, Any]) -> None:
    for path_item in document["paths"].values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            for status, words in _EVERYWHERE.items():
                # FastAPI's own 422 entry names its error shape, which our handlers replace.
                if status not in responses or "HTTPValidationError" in json.dumps(responses[status]):
                    responses[status] = {"description": words, "content": {"application/json": {"schema": _ERROR_REF}}}
    schemas = document.get("components", {}).get("schemas", {})
    if "HTTPValidationError" not in json.dumps(document["paths"]):
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)


def add_links(document: dict[str, Any]) -> None:
    paths = document["paths"]
    created = paths.get("/api/v1/tasks", {}).get("post", {}).get("responses", {})
    targets = {"GetTask": ("/api/v1/tasks/{task_id}", "get")}
    targets.update({f"{a.title().replace('-', '')}Task": (f"/api/v1/tasks/{{task_id}}/{a}", "post")
                    for a in _TASK_ACTIONS})  # fmt: skip
    links = {
        name: {"operationId": paths[path][method]["operationId"], "parameters": {"task_id": "$response.body#/task_id"}}
        for name, (path, method) in targets.items()
        if method in paths.get(path, {})
    }
    for status in ("200", "201"):
        if status in created:
            created[status]["links"] = links
