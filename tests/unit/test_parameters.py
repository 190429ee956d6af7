"""A job's parameters checked against a task type's schema: errors, defaults, secrets."""

from __future__ import annotations

import pytest

from common.flows import FieldError, ParameterField, ParameterSchema, validate_parameters

SCHEMA = ParameterSchema(
    (
        ParameterField("name", "string", required=True, pattern="^[a-z][a-z0-9_]{0,31}$"),
        ParameterField("cpu", "integer", minimum=1, maximum=64, default=1),
        ParameterField("memory_mb", "integer", minimum=256, maximum=262144, default=1024),
        ParameterField("admin_password", "string", secret=True, min_length=12),
        ParameterField("tier", "string", enum=("small", "large")),
        ParameterField("ratio", "number", minimum=0.5),
        ParameterField("tags", "array", default=[]),
        ParameterField("extra", "object"),
        ParameterField("dry_run", "boolean"),
        ParameterField("api_key", "string", max_length=4),  # not marked secret: the name says so
    )
)
SECRET = "s3cret-value-never-shown"


def errors(parameters: dict) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in validate_parameters(SCHEMA, parameters).errors]


def test_valid_parameters_get_their_defaults() -> None:
    check = validate_parameters(SCHEMA, {"name": "db1", "cpu": 4.0, "admin_password": SECRET})
    assert check.ok
    assert check.parameters == {
        "name": "db1", "cpu": 4, "admin_password": SECRET, "memory_mb": 1024, "tags": [],
    }  # fmt: skip
    assert isinstance(check.parameters["cpu"], int)


def test_defaults_are_copies() -> None:
    first = validate_parameters(SCHEMA, {"name": "a"}).parameters
    first["tags"].append("x")
    assert validate_parameters(SCHEMA, {"name": "a"}).parameters["tags"] == []


def test_no_schema_accepts_anything() -> None:
    check = validate_parameters(None, {"whatever": [1, {"x": None}]})
    assert check.ok and check.parameters == {"whatever": [1, {"x": None}]}


def test_reserved_keys_pass_undeclared_keys_do_not() -> None:
    check = validate_parameters(SCHEMA, {"name": "a", "_baton_faults": [{"command": "x"}], "zone": "b"})
    assert check.parameters["_baton_faults"] == [{"command": "x"}]
    assert [e.path for e in check.errors] == ["parameters.zone"]
    assert check.errors[0].message.startswith("unknown parameter (declared: name, cpu, memory_mb")


@pytest.mark.parametrize(
    "given, expected",
    [
        ({"name": None}, ("parameters.name", "must be a string (got null)")),
        ({"name": "Bad Name"}, ("parameters.name", "must match the pattern ^[a-z][a-z0-9_]{0,31}$")),
        ({"name": "ok\n"}, ("parameters.name", "must match the pattern ^[a-z][a-z0-9_]{0,31}$")),
        ({"cpu": 0}, ("parameters.cpu", "must be >= 1")),
        ({"cpu": 65}, ("parameters.cpu", "must be <= 64")),
        ({"cpu": 1.5}, ("parameters.cpu", "must be an integer (got a number)")),
        ({"cpu": True}, ("parameters.cpu", "must be an integer (got a boolean)")),
        ({"cpu": "2"}, ("parameters.cpu", "must be an integer (got a string)")),
        ({"ratio": float("nan")}, ("parameters.ratio", "must be a number (got a non-finite number)")),
        ({"ratio": 0.25}, ("parameters.ratio", "must be >= 0.5")),
        ({"tier": "huge"}, ("parameters.tier", 'must be one of "small", "large"')),
        ({"tags": {}}, ("parameters.tags", "must be an array (got an object)")),
        ({"extra": []}, ("parameters.extra", "must be an object (got an array)")),
        ({"dry_run": 1}, ("parameters.dry_run", "must be true or false (got an integer)")),
        ({"admin_password": "short"}, ("parameters.admin_password", "must be at least 12 characters long")),
        ({"admin_password": 12345}, ("parameters.admin_password", "must be a string (got an integer)")),
        ({"api_key": "abcdef"}, ("parameters.api_key", "must be at most 4 characters long")),
        ({"weird key": 1}, ('parameters["weird key"]', "unknown parameter (declared: ")),
    ],
)
def test_each_problem_is_named_with_its_path(given: dict, expected: tuple[str, str]) -> None:
    found = errors({"name": "db1", **given})
    assert len(found) == 1, found
    path, message = found[0]
    assert path == expected[0]
    assert message.startswith(expected[1]) if path.startswith('parameters["') else message == expected[1]


def test_a_required_parameter_must_be_given() -> None:
    assert errors({}) == [("parameters.name", "required parameter is missing")]


def test_every_problem_is_reported_at_once() -> None:
    found = errors({"cpu": 100, "tier": "x", "zone": 1})
    assert [path for path, _ in found] == [
        "parameters.cpu", "parameters.tier", "parameters.zone", "parameters.name",
    ]  # fmt: skip


def test_secret_values_are_never_in_a_message() -> None:
    secret_schema = ParameterSchema(
        (
            ParameterField("token", "string", secret=True, pattern="[0-9]+", enum=("1", "2")),
            ParameterField("pin", "integer", secret=True, maximum=10),
        )
    )
    for given in ({"token": SECRET}, {"pin": 123456789}):
        check = validate_parameters(secret_schema, given)
        assert check.errors
        for error in check.errors:
            assert SECRET not in error.message and "123456789" not in error.message
            assert "1" not in error.message.replace("<= 10", "")  # nor the allowed choices


def test_a_refused_value_is_never_in_its_message() -> None:
    for name, value in (("name", "Secretish Value"), ("tier", "secretish"), ("cpu", 987654), ("ratio", 0.123456)):
        (error,) = validate_parameters(SCHEMA, {"name": "a", name: value}).errors
        assert str(value).lower() not in error.message.lower(), error


def test_reserved_names_are_refused_but_the_fault_rules() -> None:
    for schema in (SCHEMA, None):
        check = validate_parameters(schema, {"name": "a", "_baton_faults": [], "_baton_x": 1, "_baton_": 2})
        assert [(e.path, e.message) for e in check.errors] == [
            ("parameters._baton_x", "names starting with _baton_ are reserved for baton"),
            ("parameters._baton_", "names starting with _baton_ are reserved for baton"),
        ]


def test_field_error_is_a_value() -> None:
    assert FieldError("parameters.a", "m") == FieldError("parameters.a", "m")
