"""The comparison of the client's models with the OpenAPI document (schema_shapes.py) finds each
kind of difference an API change makes, on a small document written here: a field added,
dropped or retyped, a value that may now be null or absent, an enum value added; and it passes
what a client may rightly do (read an integer as a float, leave a request's value checks to the
server, read a fixed object as a mapping)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tests.client.schema_shapes import compare

DOCUMENT = {"components": {"schemas": {
    "Kind": {"type": "string", "enum": ["a", "b"]},
    "Thing": {"type": "object", "required": ["id", "count", "kind"], "properties": {
        "id": {"type": "string"},
        "count": {"type": "integer"},
        "when": {"anyOf": [{"type": "number"}, {"type": "null"}]},
        "kind": {"$ref": "#/components/schemas/Kind"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "lock": {"type": "object", "properties": {"key": {"type": "string"}}},
        "child": {"anyOf": [{"$ref": "#/components/schemas/Thing"}, {"type": "null"}]},
    }},
    "Body": {"type": "object", "additionalProperties": False, "required": ["reason", "mode"], "properties": {
        "reason": {"type": "string", "pattern": "[^ ]"},
        "mode": {"type": "string", "enum": ["skip", "queue"]},
        "item": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
        "labels": {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "string"}}, "additionalProperties": False},
    }},
}}}  # fmt: skip
THING = {"$ref": "#/components/schemas/Thing"}
BODY = {"$ref": "#/components/schemas/Body"}


class Thing(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    count: int
    when: float | None = None
    kind: Literal["a", "b", "c"]
    tags: list[str] = Field(default_factory=list)
    lock: dict[str, Any] = Field(default_factory=dict)  # a fixed shape read as a mapping
    child: Thing | None = None


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)
    reason: str
    mode: str = "skip"  # a free string: the server checks the enum
    item: int | None = None
    labels: dict[str, str] = Field(default_factory=dict)


def thing_schema() -> tuple[dict[str, Any], dict[str, Any]]:
    """The client model's schema, and its Thing (a $def: the model refers to itself)."""
    schema = Thing.model_json_schema()
    return schema, schema["$defs"]["Thing"]


def answer_problems(model: type[BaseModel], **changes: Any) -> list[str]:
    schema, thing = thing_schema()
    for name, change in changes.items():
        if change is None:
            thing["properties"].pop(name)
        else:
            thing["properties"][name] = change
    return compare(schema, DOCUMENT, THING, "answer", "Thing")


def test_a_client_model_that_follows_the_document_passes() -> None:
    assert answer_problems(Thing) == []
    assert compare(Body.model_json_schema(mode="serialization"), DOCUMENT, BODY, "request", "Body") == []


def test_a_field_dropped_or_added_by_the_api_is_found() -> None:
    assert answer_problems(Thing, tags=None) == ["Thing: ['tags'] in the document, not in the client"]
    assert answer_problems(Thing, size={"type": "integer"}) == ["Thing: ['size'] in the client, not in the document"]


def test_a_field_retyped_is_found_at_any_depth() -> None:
    assert answer_problems(Thing, count={"type": "string"}) == [
        "Thing.count: the document has integer, the client reads only ['string']"]
    assert answer_problems(Thing, tags={"type": "array", "items": {"type": "integer"}}) == [
        "Thing.tags[]: the document has string, the client reads only ['integer']"]


def test_a_value_that_may_be_null_or_absent_must_be_read() -> None:
    assert answer_problems(Thing, when={"type": "number"}) == [
        "Thing.when: the document has null, the client reads only ['number']"]
    schema, thing = thing_schema()
    thing["required"].append("tags")
    assert compare(schema, DOCUMENT, THING, "answer", "Thing") == [
        "Thing: ['tags'] required by the client, may be left out by the document"]


def test_an_enum_value_the_client_does_not_know_is_found() -> None:
    assert answer_problems(Thing, kind={"enum": ["a"], "type": "string"}) == ["Thing.kind: client does not take ['\"b\"']"]


def test_a_request_field_the_server_needs_and_the_client_may_leave_out_is_found() -> None:
    schema = Body.model_json_schema(mode="serialization")
    schema["properties"]["mode"] = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert compare(schema, DOCUMENT, BODY, "request", "Body") == [
        "Body: ['mode'] required by the document, may be left out by the client"]


def test_a_request_value_outside_the_documents_enum_or_type_is_found() -> None:
    schema = Body.model_json_schema(mode="serialization")
    schema["properties"]["mode"] = {"enum": ["skip", "never"], "type": "string", "default": "skip"}
    schema["properties"]["item"] = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert compare(schema, DOCUMENT, BODY, "request", "Body") == [
        "Body.item: the client has string, the document reads only ['integer', 'null']",
        "Body.mode: document does not take ['\"never\"']",
    ]


def test_a_request_that_sends_null_where_the_document_takes_none_is_found() -> None:
    schema = Body.model_json_schema(mode="serialization")
    schema["properties"]["reason"] = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert compare(schema, DOCUMENT, BODY, "request", "Body") == [
        "Body.reason: the client has null, the document reads only ['string']"]
