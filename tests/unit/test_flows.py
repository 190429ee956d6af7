"""flows.yaml: defaults, and the exact "file:line: path: message" of faults. The shipped file
itself is tested in test_shipped_flows.py."""

from __future__ import annotations

from textwrap import dedent

import pytest

from common.errors import FlowError
from common.flows import FlowCatalog, ParameterField, ParameterSchema, load_flows, parse_flows
from common.models import BackoffPolicy, Step


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


# --- one fault each: exact line, path and message ------------------------------------------------


def with_parameters(*declarations: str) -> str:
    """MINIMAL with a `parameters:` block whose declarations start on line 5."""
    block = "".join(f"      {line}\n" for line in declarations)
    return MINIMAL.replace("  t:\n", "  t:\n    parameters:\n" + block)


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

CASES = {
    "duplicate key, nested": (
        """\
        version: 1
        task_types:
          t:
            steps:
              - name: a
                normal:
                  module: m
                  command: c
                  timeout: 5
                  timeout: 6
        """,
        [
            "flows.yaml:10: task_types.t.steps[0].normal.timeout: duplicate key: first defined on line 9"
        ],
    ),
    "duplicate task type": (
        """\
        version: 1
        task_types:
          t:
            steps: [{name: a, normal: {module: m, command: c}}]
          t:
            steps: [{name: b, normal: {module: m, command: c}}]
        """,
        ["flows.yaml:5: task_types.t: duplicate key: first defined on line 3"],
    ),
    "duplicate top-level key": (
        "version: 1\nversion: 1\n" + MINIMAL.removeprefix("version: 1\n"),
        ["flows.yaml:2: version: duplicate key: first defined on line 1"],
    ),
    "unknown key with a close match": (
        MINIMAL.replace("command: c}", "command: c, timout: 5}"),
        [
            (
                "flows.yaml:6: task_types.t.steps[0].normal.timout: unknown key; did you mean"
                ' "timeout"? allowed keys here: module, command, timeout, retry, backoff'
            )
        ],
    ),
    "unknown key in a step": (
        MINIMAL + "        undo: {module: m, command: c}\n",
        [
            (
                "flows.yaml:7: task_types.t.steps[0].undo: unknown key;"
                " allowed keys here: name, normal, rollback, after, for_each, max_parallel, flow, inputs"
            )
        ],
    ),
    "unknown top-level key": (
        MINIMAL + "tasks: {}\n",
        [
            (
                'flows.yaml:7: tasks: unknown key; did you mean "task_types"?'
                " allowed keys here: version, defaults, task_types"
            )
        ],
    ),
    "unknown backoff key": (
        MINIMAL.replace("command: c}", "command: c, backoff: {factor: 2}}"),
        [
            (
                "flows.yaml:6: task_types.t.steps[0].normal.backoff.factor: unknown key;"
                " allowed keys here: initial, max, multiplier, jitter"
            )
        ],
    ),
    "bool is not a number": (
        MINIMAL.replace("command: c}", "command: c, timeout: true}"),
        ["flows.yaml:6: task_types.t.steps[0].normal.timeout: must be a number (got true)"],
    ),
    "bool is not an integer": (
        MINIMAL.replace("command: c}", "command: c, retry: false}"),
        ["flows.yaml:6: task_types.t.steps[0].normal.retry: must be an integer (got false)"],
    ),
    "quoted number": (
        MINIMAL.replace("command: c}", 'command: c, timeout: "10"}'),
        [
            'flows.yaml:6: task_types.t.steps[0].normal.timeout: must be a number (got "10"; remove the quotes)'
        ],
    ),
    "fractional retry": (
        MINIMAL.replace("command: c}", "command: c, retry: 1.5}"),
        ["flows.yaml:6: task_types.t.steps[0].normal.retry: must be an integer (got 1.5)"],
    ),
    "yes is not text": (
        MINIMAL.replace("command: c}", "command: yes}"),
        [
            (
                "flows.yaml:6: task_types.t.steps[0].normal.command: must be text"
                " (got true; YAML reads yes/no/on/off as true/false: quote it)"
            )
        ],
    ),
    "steps not a list": (
        MINIMAL.replace(
            "    steps:\n      - name: a\n        normal: {module: m, command: c}\n",
            "    steps: a\n",
        ),
        ['flows.yaml:4: task_types.t.steps: must be a list (got "a")'],
    ),
    "step not a mapping": (
        MINIMAL + "      - check_resource\n",
        ['flows.yaml:7: task_types.t.steps[1]: must be a mapping (got "check_resource")'],
    ),
    "parameters not a mapping": (
        MINIMAL.replace("  t:\n", "  t:\n    parameters: [region]\n"),
        ["flows.yaml:4: task_types.t.parameters: must be a mapping (got a list)"],
    ),
    **{name: (with_parameters(*case[0]), case[1]) for name, case in PARAMETER_CASES.items()},
    "empty value": (
        """\
        version: 1
        task_types:
          t:
            steps:
              - name: a
                normal:
                  module: m
                  command: c
                  timeout:
        """,
        [
            "flows.yaml:9: task_types.t.steps[0].normal.timeout: is empty: write a value or remove the key"
        ],
    ),
    "empty required value": (
        MINIMAL.replace("command: c}", "command: }"),
        ["flows.yaml:6: task_types.t.steps[0].normal.command: is empty: write a value"],
    ),
    "missing key points at its mapping": (
        """\
        version: 1
        task_types:
          t:
            steps:
              - name: a
                normal:
                  module: m
                  timeout: 5
        """,
        ["flows.yaml:7: task_types.t.steps[0].normal.command: required key is missing"],
    ),
    "missing normal": (
        MINIMAL.replace(
            "        normal: {module: m, command: c}\n",
            "        rollback: {module: m, command: c}\n",
        ),
        ["flows.yaml:5: task_types.t.steps[0].normal: required key is missing"],
    ),
    "missing steps": (
        "version: 1\ntask_types:\n  t:\n    description: nothing to do\n",
        ["flows.yaml:4: task_types.t.steps: required key is missing"],
    ),
    "missing version": (
        "# comment\n" + MINIMAL.removeprefix("version: 1\n"),
        ["flows.yaml:2: version: required key is missing"],
    ),
    "missing task_types": (
        "version: 1\ndefaults: {timeout: 5}\n",
        ["flows.yaml:1: task_types: required key is missing"],
    ),
    "empty task_types": (
        "version: 1\ntask_types: {}\n",
        ["flows.yaml:2: task_types: must not be empty"],
    ),
    "empty steps": (
        "version: 1\ntask_types:\n  t:\n    steps: []\n",
        ["flows.yaml:4: task_types.t.steps: must not be empty"],
    ),
    "version 2": (
        MINIMAL.replace("version: 1", "version: 2"),
        ["flows.yaml:1: version: must be 1, the only version of this format (got 2)"],
    ),
    "version as text": (
        MINIMAL.replace("version: 1", 'version: "1"'),
        ['flows.yaml:1: version: must be an integer (got "1"; remove the quotes)'],
    ),
    "version true": (
        MINIMAL.replace("version: 1", "version: true"),
        ["flows.yaml:1: version: must be an integer (got true)"],
    ),
    "timeout zero": (
        MINIMAL.replace("command: c}", "command: c, timeout: 0}"),
        ["flows.yaml:6: task_types.t.steps[0].normal.timeout: must be > 0 (got 0)"],
    ),
    "timeout negative in defaults": (
        "version: 1\ndefaults:\n  timeout: -5\n" + MINIMAL.removeprefix("version: 1\n"),
        ["flows.yaml:3: defaults.timeout: must be > 0 (got -5)"],
    ),
    "timeout infinite": (
        MINIMAL.replace("command: c}", "command: c, timeout: .inf}"),
        ["flows.yaml:6: task_types.t.steps[0].normal.timeout: must be a finite number (got inf)"],
    ),
    "retry negative": (
        MINIMAL.replace("command: c}", "command: c, retry: -1}"),
        ["flows.yaml:6: task_types.t.steps[0].normal.retry: must be >= 0 (got -1)"],
    ),
    "backoff initial zero": (
        MINIMAL.replace("command: c}", "command: c, backoff: {initial: 0}}"),
        ["flows.yaml:6: task_types.t.steps[0].normal.backoff.initial: must be > 0 (got 0)"],
    ),
    "backoff multiplier below 1": (
        MINIMAL.replace("command: c}", "command: c, backoff: {multiplier: 0.5}}"),
        ["flows.yaml:6: task_types.t.steps[0].normal.backoff.multiplier: must be >= 1 (got 0.5)"],
    ),
    "backoff jitter 1": (
        MINIMAL.replace("command: c}", "command: c, backoff: {jitter: 1}}"),
        ["flows.yaml:6: task_types.t.steps[0].normal.backoff.jitter: must be < 1 (got 1)"],
    ),
    "backoff jitter negative": (
        MINIMAL.replace("command: c}", "command: c, backoff: {jitter: -0.1}}"),
        ["flows.yaml:6: task_types.t.steps[0].normal.backoff.jitter: must be >= 0 (got -0.1)"],
    ),
    "backoff max below initial in one block": (
        """\
        version: 1
        task_types:
          t:
            steps:
              - name: a
                normal:
                  module: m
                  command: c
                  backoff:
                    initial: 10
                    max: 5
        """,
        [
            "flows.yaml:11: task_types.t.steps[0].normal.backoff.max: must be >= initial (got 5; initial is 10)"
        ],
    ),
    "backoff max below the inherited initial": (
        "version: 1\ndefaults:\n  backoff: {initial: 10}\n"
        + MINIMAL.removeprefix("version: 1\n").replace(
            "command: c}", "command: c, backoff: {max: 5}}"
        ),
        [
            (
                "flows.yaml:8: task_types.t.steps[0].normal.backoff.max: must be >= initial"
                " (got 5; initial is 10, from defaults.backoff.initial)"
            )
        ],
    ),
    "backoff initial above the built-in max": (
        "version: 1\ndefaults:\n  backoff:\n    initial: 100\n"
        + MINIMAL.removeprefix("version: 1\n"),
        [
            (
                "flows.yaml:4: defaults.backoff.initial: must be <= max"
                " (got 100; max is 60, from the built-in default)"
            )
        ],
    ),
    "duplicate step names": (
        MINIMAL + "      - name: b\n        normal: {module: m, command: c}\n"
        "      - name: a\n        normal: {module: m, command: c}\n",
        [
            'flows.yaml:9: task_types.t.steps[2].name: duplicate step name "a": steps[0] on line 5 has it'
        ],
    ),
    "bad task type name": (
        MINIMAL.replace("  t:", "  Create-Instance:"),
        [
            (
                'flows.yaml:3: task_types["Create-Instance"]: must be a lowercase name:'
                ' a-z first, then a-z, 0-9 or _ (got "Create-Instance")'
            )
        ],
    ),
    "bad module name": (
        MINIMAL.replace("module: m", "module: MySQL"),
        [
            (
                "flows.yaml:6: task_types.t.steps[0].normal.module: must be a lowercase name:"
                ' a-z first, then a-z, 0-9 or _ (got "MySQL")'
            )
        ],
    ),
    "bad command name": (
        MINIMAL.replace("command: c", "command: 2fa"),
        [
            (
                "flows.yaml:6: task_types.t.steps[0].normal.command: must be a lowercase name:"
                ' a-z first, then a-z, 0-9 or _ (got "2fa")'
            )
        ],
    ),
    "bad step name": (
        MINIMAL.replace("name: a", "name: check resource"),
        [
            (
                "flows.yaml:5: task_types.t.steps[0].name: must be a lowercase name:"
                ' a-z first, then a-z, 0-9 or _ (got "check resource")'
            )
        ],
    ),
}


@pytest.mark.parametrize("text, expected", CASES.values(), ids=CASES.keys())
def test_each_fault_is_reported_exactly(text: str, expected: list[str]) -> None:
    assert problems(text) == expected


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
