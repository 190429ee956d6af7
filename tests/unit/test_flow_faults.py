"""flows.yaml: one fault at a time, each reported as its exact "file:line: path: message"."""

from __future__ import annotations

import pytest

from tests.unit.flow_parameter_faults import PARAMETER_CASES
from tests.unit.test_flows import MINIMAL, problems, with_parameters


# --- one fault each: exact line, path and message ------------------------------------------------


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
                " allowed keys here: name, after, normal, rollback, max_wait, for_each, max_parallel, max_items, tolerate, on_failure, waves, between_waves, flow, inputs, approve, lock, rate"
            )
        ],
    ),
    "unknown top-level key": (
        MINIMAL + "tasks: {}\n",
        [
            (
                'flows.yaml:7: tasks: unknown key; did you mean "task_types"?'
                " allowed keys here: version, defaults, lock_modes, task_types, freeze"
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
    "deadline zero": (
        MINIMAL.replace("    steps:", "    deadline: 0\n    steps:"),
        ["flows.yaml:4: task_types.t.deadline: must be > 0 (got 0)"],
    ),
    "deadline as text": (
        MINIMAL.replace("    steps:", "    deadline: soon\n    steps:"),
        ['flows.yaml:4: task_types.t.deadline: must be a number (got "soon")'],
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
