"""flows.yaml: defaults, and the exact "file:line: path: message" of faults. The shipped file
itself is tested in test_shipped_flows.py."""

from __future__ import annotations

from textwrap import dedent

import pytest

from common.errors import FlowError
from common.flows import FlowCatalog, ParameterField, ParameterSchema, load_flows, parse_flows
from common.engine.document import BackoffPolicy, Step


# The smallest valid file; cases below change one thing in files shaped like it.
MINIMAL = """\
version: 1
task_types:
  t:
    steps:
      - name: a
        normal: {module: m, command: c}
"""


def problems(text: str, known: dict[str, set[str]] | None = None) -> list[str]:
    with pytest.raises(FlowError) as caught:
        parse_flows(dedent(text), "flows.yaml", known)
    return caught.value.problems


def with_parameters(*declarations: str) -> str:
    """MINIMAL with a `parameters:` block whose declarations start on line 5."""
    block = "".join(f"      {line}\n" for line in declarations)
    return MINIMAL.replace("  t:\n", "  t:\n    parameters:\n" + block)


def only_step(text: str) -> Step:
    return parse_flows(dedent(text), "flows.yaml").get("t").steps[0]


# --- catalog ------------------------------------------------------------------------------------


def test_task_types_cannot_be_changed_through_the_catalog() -> None:
    catalog = parse_flows(MINIMAL, "flows.yaml")
    with pytest.raises(TypeError):
        catalog.task_types["x"] = catalog.get("t")  # type: ignore[index]


# --- defaults -----------------------------------------------------------------------------------


def test_defaults_apply_to_every_phase_that_leaves_a_value_out() -> None:
    catalog = parse_flows(
        dedent("""\
            version: 1
            defaults:
              timeout: 30
              retry: 4
              backoff: {initial: 2, max: 20}
            task_types:
              t:
                description: Two steps.
                parameters: {region: {type: string}}
                steps:
                  - name: a
                    normal: {module: m, command: c}
                    rollback: {module: m, command: undo, timeout: 5.5, backoff: {multiplier: 3}}
                  - name: b
                    normal: {module: n, command: c, retry: 0, backoff: {initial: 4, jitter: 0}}
        """),
        "flows.yaml",
    )
    flow = catalog.get("t")
    assert flow.description == "Two steps."
    assert flow.parameter_schema == ParameterSchema((ParameterField("region", "string"),))
    a, b = flow.steps
    assert (a.NormalTimeout, a.NormalRetry) == (30.0, 4)
    assert a.NormalBackoff == BackoffPolicy(Initial=2, Max=20, Multiplier=2, Jitter=0.2)
    assert (a.RollbackModule, a.RollbackCommand, a.RollbackTimeout, a.RollbackRetry) == (
        "m",
        "undo",
        5.5,
        4,
    )
    assert a.RollbackBackoff == BackoffPolicy(Initial=2, Max=20, Multiplier=3, Jitter=0.2)
    assert (b.NormalTimeout, b.NormalRetry) == (30.0, 0)
    assert b.NormalBackoff == BackoffPolicy(Initial=4, Max=20, Multiplier=2, Jitter=0)
    assert not b.has_rollback
    assert catalog.modules() == {"m", "n"}
    assert catalog.commands_of("m") == {"c", "undo"}


def test_builtin_defaults_without_a_defaults_block() -> None:
    step = only_step(MINIMAL)
    assert (step.NormalTimeout, step.NormalRetry, step.NormalBackoff) == (60.0, 0, BackoffPolicy())
    assert step.RollbackModule is None


def test_yaml_merge_keys_are_honoured() -> None:
    step = only_step("""\
        version: 1
        task_types:
          t:
            steps:
              - name: a
                normal: &mysql {module: mysql, command: init_instance, timeout: 120}
                rollback: {<<: *mysql, command: clean_instance}
    """)
    assert (step.RollbackModule, step.RollbackCommand, step.RollbackTimeout) == (
        "mysql",
        "clean_instance",
        120.0,
    )


# --- the file as a whole ------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n"])
def test_empty_file(text: str) -> None:
    assert problems(text) == [
        "flows.yaml:1: (root): the file is empty: it needs version and task_types"
    ]


def test_file_that_is_not_a_mapping() -> None:
    assert problems("# flows\n- a\n- b\n") == [
        "flows.yaml:1: (root): must be a mapping with version and task_types (got a list)"
    ]


def test_yaml_syntax_error_gives_the_parser_line() -> None:
    assert problems("""\
        version: 1
        task_types:
          t:
            steps: [{name: a, normal: {module: m, command: c}
    """) == [
        (
            "flows.yaml:5: (syntax): expected ',' or '}', but got '<stream end>'"
            " (while parsing a flow mapping, line 4)"
        )
    ]


def test_yaml_indentation_error_gives_the_parser_line() -> None:
    assert problems("""\
        version: 1
        task_types:
          t:
            steps:
              - name: a
                normal: {module: m, command: c}
                 rollback: {module: m, command: c}
    """) == [
        (
            "flows.yaml:7: (syntax): expected <block end>, but found '<block mapping start>'"
            " (while parsing a block mapping, line 5)"
        )
    ]


def test_two_documents_are_a_syntax_error() -> None:
    assert problems(MINIMAL + "---\nversion: 1\n") == [
        "flows.yaml:7: (syntax): found another document (expected a single document in the stream, line 1)"
    ]


def test_unknown_yaml_tag_is_reported_once() -> None:
    assert problems(MINIMAL.replace("command: c}", "command: c, timeout: !seconds 5}")) == [
        (
            "flows.yaml:6: task_types.t.steps[0].normal.timeout: cannot read this value:"
            " could not determine a constructor for the tag '!seconds'"
        )
    ]


def test_unreadable_file() -> None:
    with pytest.raises(FlowError) as caught:
        load_flows("/nonexistent/flows.yaml")
    [problem] = caught.value.problems
    assert problem.startswith("/nonexistent/flows.yaml:1: (root): cannot read the file: ")


# --- known commands -----------------------------------------------------------------------------

KNOWN = {"resource": {"check_resource", "restore_resource"}, "monitor": {"report_event"}}


def test_known_commands_accept_a_matching_file() -> None:
    text = MINIMAL.replace("module: m, command: c", "module: resource, command: check_resource")
    assert isinstance(parse_flows(text, "flows.yaml", KNOWN), FlowCatalog)


def test_known_commands_report_unknown_modules_and_commands() -> None:
    assert problems(
        """\
        version: 1
        task_types:
          t:
            steps:
              - name: a
                normal: {module: resource, command: check_resource}
                rollback: {module: resource, command: undo_check}
              - name: b
                normal: {module: mysql, command: init_instance}
        """,
        KNOWN,
    ) == [
        (
            'flows.yaml:7: task_types.t.steps[0].rollback.command: module "resource" has no command'
            ' "undo_check" (it serves: check_resource, restore_resource)'
        ),
        (
            'flows.yaml:9: task_types.t.steps[1].normal.module: unknown module "mysql"'
            " (known modules: monitor, resource)"
        ),
    ]


# --- many faults at once ------------------------------------------------------------------------


def test_every_problem_is_reported_together_in_file_order() -> None:
    assert problems(
        """\
        version: 1
        defaults:
          retry: -1
        task_types:
          Bad:
            steps: []
          t:
            steps:
              - name: a
                normal: {module: resource, command: check_resource, timeout: "10"}
              - name: a
                normal:
                  module: resource
                  module: monitor
                rollback: {module: mysql, command: clean, retry: yes}
        """,
        KNOWN,
    ) == [
        "flows.yaml:3: defaults.retry: must be >= 0 (got -1)",
        'flows.yaml:5: task_types.Bad: must be a lowercase name: a-z first, then a-z, 0-9 or _ (got "Bad")',
        "flows.yaml:6: task_types.Bad.steps: must not be empty",
        'flows.yaml:10: task_types.t.steps[0].normal.timeout: must be a number (got "10"; remove the quotes)',
        'flows.yaml:11: task_types.t.steps[1].name: duplicate step name "a": steps[0] on line 9 has it',
        "flows.yaml:13: task_types.t.steps[1].normal.command: required key is missing",
        "flows.yaml:14: task_types.t.steps[1].normal.module: duplicate key: first defined on line 13",
        "flows.yaml:15: task_types.t.steps[1].rollback.retry: must be an integer (got true)",
        (
            'flows.yaml:15: task_types.t.steps[1].rollback.module: unknown module "mysql"'
            " (known modules: monitor, resource)"
        ),
    ]


def test_a_fault_message_carries_every_problem() -> None:
    with pytest.raises(FlowError) as caught:
        parse_flows("version: 3\ntask_types: []\n", "x.yaml")
    assert str(caught.value) == (
        "x.yaml:1: version: must be 1, the only version of this format (got 3)\n"
        "x.yaml:2: task_types: must be a mapping (got a list)"
    )


# --- parameter schemas --------------------------------------------------------------------------

EXAMPLE_PARAMETERS = with_parameters(
    'name:        {type: string, required: true, pattern: "^[a-z][a-z0-9_]{0,31}$", description: "instance name"}',
    "cpu:         {type: integer, minimum: 1, maximum: 64, default: 1}",
    "memory_mb:   {type: integer, minimum: 256, maximum: 262144, default: 1024}",
    "admin_password: {type: string, secret: true, min_length: 12}",
    "tier:        {type: string, enum: [small, large]}",
    "ratio:       {type: number, minimum: 0.5}",
    "tags:        {type: array, default: []}",
    "extra:       {type: object}",
    "dry_run:     {type: boolean, default: false}",
)


def test_a_parameter_schema_is_read_as_declared() -> None:
    schema = parse_flows(EXAMPLE_PARAMETERS).get("t").parameter_schema
    assert schema is not None
    assert [f.name for f in schema.fields] == [
        "name", "cpu", "memory_mb", "admin_password", "tier", "ratio", "tags", "extra", "dry_run",
    ]  # fmt: skip
    assert schema.field("name") == ParameterField(
        "name", "string", required=True, pattern="^[a-z][a-z0-9_]{0,31}$", description="instance name"
    )
    cpu = schema.field("cpu")
    assert (cpu.minimum, cpu.maximum, cpu.default) == (1, 64, 1) and isinstance(cpu.minimum, int)
    assert schema.field("tier").enum == ("small", "large")
    assert schema.field("tags").default == [] and schema.field("dry_run").default is False
    assert not schema.field("extra").has_default
    assert schema.secret_names == ["admin_password"]


def test_parameters_left_out_accept_anything_and_empty_accepts_nothing_declared() -> None:
    assert parse_flows(MINIMAL).get("t").parameter_schema is None
    assert parse_flows(MINIMAL).get("t").validate({"anything": 1}).ok
    empty = parse_flows(MINIMAL.replace("  t:\n", "  t:\n    parameters: {}\n")).get("t")
    assert empty.parameter_schema == ParameterSchema(())
    assert not empty.validate({"anything": 1}).ok
    assert empty.validate({"_baton_faults": []}).ok


def test_task_type_describes_its_schema_with_secrets_masked() -> None:
    text = with_parameters(
        "admin_password: {type: string, secret: true, default: correct-horse-battery}",
        "tier: {type: string, enum: [small, large], default: small}",
    )
    described = parse_flows(text).get("t").parameter_schema.describe()
    assert described == {
        "admin_password": {"type": "string", "required": False, "default": "***", "secret": True},
        "tier": {
            "type": "string", "required": False, "default": "small",
            "enum": ["small", "large"], "secret": False,
        },
    }  # fmt: skip
