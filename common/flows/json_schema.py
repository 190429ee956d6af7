"""A task type's parameter schema as JSON Schema, for the OpenAPI document.

Pure. It states exactly what validate_parameters accepts, so a client (or a fuzzer) that follows
the published schema is never refused, and one that breaks it is:
- `pattern` must match the whole value there, hence the `^(?:...)$` anchoring here;
- undeclared names are refused, except the reserved `_baton_` ones (patternProperties);
- a secret is `writeOnly` with `format: password`, and neither its default nor its choices
  are published (the document is readable by every read token).
"""

from __future__ import annotations

from typing import Any

from common.flows.parameters import RESERVED_PREFIX, ParameterField, ParameterSchema

_CONSTRAINTS = {"minimum": "minimum", "maximum": "maximum", "min_length": "minLength", "max_length": "maxLength"}


def parameters_json_schema(schema: ParameterSchema | None) -> dict[str, Any]:
    """The JSON Schema of a job's `parameters` object (None: a type that accepts anything)."""
    if schema is None:
        return {"type": "object", "description": "Any parameters: this task type declares none"}
    shown: dict[str, Any] = {
        "type": "object",
        "properties": {field.name: field_json_schema(field) for field in schema.fields},
        "patternProperties": {f"^{RESERVED_PREFIX}": {}},
        "additionalProperties": False,
    }
    required = [field.name for field in schema.fields if field.required and not field.has_default]
    if required:
        shown["required"] = required
    return shown


def field_json_schema(field: ParameterField) -> dict[str, Any]:
    shown: dict[str, Any] = {"type": field.type}
    if field.description:
        shown["description"] = field.description
    for ours, theirs in _CONSTRAINTS.items():
        value = getattr(field, ours)
        if value is not None:
            shown[theirs] = value
    if field.pattern is not None:
        shown["pattern"] = f"^(?:{field.pattern})$"
    if field.hides_value:
        shown.update(writeOnly=True, format="password")
        return shown
    if field.enum is not None:
        shown["enum"] = list(field.enum)
    if field.has_default:
        shown["default"] = field.default
    return shown
