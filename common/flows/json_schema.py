"""A task type's parameter schema as JSON Schema, for the OpenAPI document.

Pure. It states exactly what validate_parameters accepts, so a client (or a fuzzer) that follows
the published schema is never refused, and one that breaks it is:
- `pattern` must match the whole value there, hence the `^(?:...)$` anchoring here;
- undeclared names are refused, and so are the reserved `_baton_` ones, except `_baton_faults`;
- a secret is `writeOnly` with `format: password`, and neither its default nor its choices
  are published (the document is readable by every read token);
- free-form values (an object or array parameter, a type without `parameters:`, `_baton_faults`)
  are STORED_JSON: what the input limits take (common.input_limits) as far as JSON Schema can
  say it: plain keys, strings within the length limit, integers within 64 bits. Depth, item
  and byte totals are not expressible; a value past those is refused at the edge with a 422.
"""

from __future__ import annotations

from typing import Any

from common.flows.parameters import CLIENT_RESERVED, ParameterField, ParameterSchema
from common.reserved import RESERVED_PREFIX
from common.input_limits import INT64_MAX, INT64_MIN, MAX_KEY_LENGTH

STORED_JSON = "StoredJson"
_REF = {"$ref": f"#/components/schemas/{STORED_JSON}"}
# No NUL or ".", not starting with "$", at most MAX_KEY_LENGTH characters (input_limits.key_problem).
PLAIN_KEY = f"^([^$.\\u0000][^.\\u0000]{{0,{MAX_KEY_LENGTH - 1}}})?$"


def stored_json_schema(max_string: int) -> dict[str, Any]:
    """The component every free-form value refers to (recursive)."""
    return {
        "description": "Any JSON value the input limits take (plain keys, bounded strings and integers)",
        "anyOf": [
            {"type": "null"},
            {"type": "boolean"},
            {"type": "integer", "minimum": INT64_MIN, "maximum": INT64_MAX},
            {"type": "number"},
            {"type": "string", "maxLength": max_string},
            {"type": "array", "items": _REF},
            {"type": "object", "propertyNames": {"pattern": PLAIN_KEY}, "additionalProperties": _REF},
        ],
    }

_CONSTRAINTS = {"minimum": "minimum", "maximum": "maximum", "min_length": "minLength", "max_length": "maxLength"}


# Plain keys, and not a reserved name (but for the ones a client may send).
_NAMES = {"allOf": [{"pattern": PLAIN_KEY},
                    {"anyOf": [{"not": {"pattern": f"^{RESERVED_PREFIX}"}}, {"enum": list(CLIENT_RESERVED)}]}]}  # fmt: skip


def parameters_json_schema(schema: ParameterSchema | None, also_required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON Schema of a job's `parameters` object (None: a type that accepts anything).
    `also_required`: names the task type needs besides its schema's (its lock key's)."""
    if schema is None:
        shown: dict[str, Any] = {
            "type": "object", "description": "Any parameters: this task type declares none",
            "propertyNames": _NAMES, "additionalProperties": _REF,
        }  # fmt: skip
        if also_required:
            shown["required"] = sorted(set(also_required))
        return shown
    shown = {
        "type": "object",
        "properties": {field.name: field_json_schema(field) for field in schema.fields} | {n: _REF for n in CLIENT_RESERVED},
        "propertyNames": {"pattern": PLAIN_KEY},
        "additionalProperties": False,
    }
    required = [field.name for field in schema.fields
                if (field.required or field.name in also_required) and not field.has_default]  # fmt: skip
    if required:
        shown["required"] = required
    return shown


def field_json_schema(field: ParameterField) -> dict[str, Any]:
    shown: dict[str, Any] = {"type": field.type}
    if field.type == "object":
        shown.update(propertyNames={"pattern": PLAIN_KEY}, additionalProperties=_REF)
    elif field.type == "array":
        shown["items"] = _REF
    elif field.type == "integer":
        shown.update(minimum=INT64_MIN, maximum=INT64_MAX)
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
