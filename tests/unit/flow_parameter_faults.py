"""flows.yaml faults in a task type's parameter schema, one each: (its parameters, the exact
problems reported), run by tests/unit/test_flow_faults.py."""

from __future__ import annotations

_P = "task_types.t.parameters"
PARAMETER_CASES = {
    "parameter without type": (
        ["cpu: {minimum: 1}"],
        [f"flows.yaml:5: {_P}.cpu.type: required key is missing"],
    ),
    "unknown parameter type": (
        ["cpu: {type: int}"],
        [
            f"flows.yaml:5: {_P}.cpu.type: must be one of 'string', 'integer', 'number',"
            " 'boolean', 'object' or 'array' (got \"int\")"
        ],
    ),
    "unknown parameter key": (
        ["cpu: {type: integer, min: 1}"],
        [
            f'flows.yaml:5: {_P}.cpu.min: unknown key; did you mean "minimum"? allowed keys here:'
            " type, required, default, description, minimum, maximum, min_length, max_length,"
            " pattern, enum, secret"
        ],
    ),
    "bad regular expression": (
        ["name: {type: string}", 'code: {type: string, pattern: "^[a-z(+$"}'],
        [
            f"flows.yaml:6: {_P}.code.pattern: not a valid regular expression:"
            " unterminated character set at position 1"
        ],
    ),
    "required is not a boolean": (
        ['name: {type: string, required: "yes"}'],
        [f'flows.yaml:5: {_P}.name.required: must be true or false (got "yes")'],
    ),
    "minimum is not a number": (
        ["cpu: {type: integer, minimum: one}"],
        [f'flows.yaml:5: {_P}.cpu.minimum: must be a number (got "one")'],
    ),
    "minimum is infinite": (
        ["cpu: {type: number, minimum: .inf}"],
        [f"flows.yaml:5: {_P}.cpu.minimum: must be a finite number (got inf)"],
    ),
    "negative length": (
        ["name: {type: string, min_length: -1}"],
        [f"flows.yaml:5: {_P}.name.min_length: must be >= 0 (got -1)"],
    ),
    "empty enum": (
        ["tier: {type: string, enum: []}"],
        [f"flows.yaml:5: {_P}.tier.enum: must not be empty"],
    ),
    "empty default": (
        ["tier:", "  type: string", "  default:"],
        [f"flows.yaml:7: {_P}.tier.default: is empty: write a value or remove the key"],
    ),
    "bad parameter name": (
        ["instance name: {type: string}"],
        [
            f'flows.yaml:5: {_P}["instance name"]: must be a name: a letter or _ first,'
            ' then letters, digits or _ (got "instance name")'
        ],
    ),
    "reserved parameter name": (
        ["_baton_faults: {type: array}"],
        [f"flows.yaml:5: {_P}._baton_faults: names starting with _baton_ are reserved for baton"],
    ),
    "length bound on an integer": (
        ["cpu: {type: integer, max_length: 3}"],
        [f"flows.yaml:5: {_P}.cpu.max_length: applies to string parameters only (this one is integer)"],
    ),
    "range bound on a string": (
        ["name:", "  type: string", "  maximum: 3"],
        [
            f"flows.yaml:7: {_P}.name.maximum: applies to integer and number parameters only"
            " (this one is string)"
        ],
    ),
    "maximum below minimum": (
        ["cpu: {type: integer, minimum: 8, maximum: 4}"],
        [f"flows.yaml:5: {_P}.cpu.maximum: must be >= minimum (got 4; minimum is 8)"],
    ),
    "max_length below min_length": (
        ["name:", "  type: string", "  min_length: 5", "  max_length: 2"],
        [f"flows.yaml:8: {_P}.name.max_length: must be >= min_length (got 2; min_length is 5)"],
    ),
    "default of the wrong type": (
        ["cpu:", "  type: integer", '  default: "2"'],
        [f"flows.yaml:7: {_P}.cpu.default: does not fit the declaration: must be an integer (got a string)"],
    ),
    "default out of range": (
        ["cpu: {type: integer, maximum: 64, default: 128}"],
        [f"flows.yaml:5: {_P}.cpu.default: does not fit the declaration: must be <= 64 (got 128)"],
    ),
    "default not among the choices": (
        ["tier: {type: string, enum: [small, large], default: huge}"],
        [
            f'flows.yaml:5: {_P}.tier.default: does not fit the declaration: must be one of'
            ' "small", "large" (got "huge")'
        ],
    ),
    "secret default is never shown": (
        ["admin_password: {type: string, secret: true, min_length: 12, default: hunter2}"],
        [
            f"flows.yaml:5: {_P}.admin_password.default: does not fit the declaration:"
            " must be at least 12 characters long"
        ],
    ),
    "required with a default": (
        ["tier:", "  type: string", "  required: true", "  default: small"],
        [
            f"flows.yaml:8: {_P}.tier.default: a required parameter takes no default:"
            " remove `required: true` or the default"
        ],
    ),
    "enum choice of the wrong type": (
        ["cpu:", "  type: integer", "  enum:", "    - 1", "    - two"],
        [f"flows.yaml:9: {_P}.cpu.enum[1]: must be an integer (got a string)"],
    ),
    "pattern pattern mismatch in a choice": (
        ['code: {type: string, pattern: "[a-z]+", enum: [abc, A1]}'],
        [f'flows.yaml:5: {_P}.code.enum[1]: must match the pattern [a-z]+ (got "A1")'],
    ),
}
