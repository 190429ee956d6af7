"""`waves` and `between_waves` in flows.yaml (docs/fan-out.md, "Waves"): what a step's waves build
into the step document, and each fault reported with its line and path."""

from __future__ import annotations

import pytest

from common.flows import parse_flows
from tests.unit.test_flows import problems

HEAD = """\
version: 1
task_types:
  t:
    parameters:
      hosts: {type: array}
    steps:
      - name: a
        for_each: hosts
        normal: {module: m, command: c}
"""


def test_waves_build_each_waves_size_and_gate():
    text = HEAD + """\
        waves: [{size: 1, pause: {timeout: 1h, on_timeout: fail}, tolerate: {count: 0}},
                {size: "10%", check: {module: health, command: check_wave}}, rest]
        between_waves: {bake: 5m}
      - name: b
        for_each: hosts
        normal: {module: m, command: c}
"""
    steps = parse_flows(text, "flows.yaml").task_types["t"].steps
    assert [w.model_dump(mode="json") for w in steps[0].Waves] == [
        {"Size": 1, "Pause": True, "PauseTimeout": 3600.0, "OnTimeout": "fail", "Tolerate": {"Count": 0}},
        {"Size": "10%", "Check": {"Module": "health", "Command": "check_wave"}},
        {"Size": "rest", "Bake": 300.0},
    ]
    assert steps[1].Waves is None  # and a pause switched off builds none:
    text = HEAD + "        waves: [{size: 1, pause: false}, rest]\n"
    assert [w.Pause for w in parse_flows(text, "flows.yaml").task_types["t"].steps[0].Waves] == [False, False]
    assert steps[1].Waves is None and "Waves" not in steps[1].model_dump(mode="json")  # stored as before


@pytest.mark.parametrize(("line", "said"), [
    ('        waves: [1, rest, 5]\n',
     'flows.yaml:10: task_types.t.steps[0].waves: only the last wave may be "rest": it takes every item left'),
    ('        waves: []\n', "flows.yaml:10: task_types.t.steps[0].waves: give at least one wave"),
    ('        waves: [0]\n', 'flows.yaml:10: task_types.t.steps[0].waves[0].size: must be a number of items (>= 1), '
     'a percentage like "10%" (above 0, at most 100) or "rest" (got 0)'),
    ('        waves: [2, "150%"]\n', "flows.yaml:10: task_types.t.steps[0].waves[1].size: must be a number of items"),
    ('        waves: [true]\n', "flows.yaml:10: task_types.t.steps[0].waves[0].size: must be a number of items"),
    ('        waves: [{size: 2, bake: soon}]\n', "flows.yaml:10: task_types.t.steps[0].waves[0].bake: must be seconds"),
    ('        waves: [{size: 2, pause: {timeout: 1h, on_timeout: later}}]\n',
     "flows.yaml:10: task_types.t.steps[0].waves[0].pause.on_timeout: must be one of"),
    ('        waves: [{size: 1, check: {module: Health, command: c}}]\n',
     "flows.yaml:10: task_types.t.steps[0].waves[0].check.module: must be a lowercase name"),
    ('        waves: [1]\n        between_waves: {pause: {on_timeout: fail}}\n',
     "flows.yaml:11: task_types.t.steps[0].between_waves.pause: on_timeout needs a timeout: add pause.timeout"),
])
def test_a_wrong_wave_is_refused_naming_its_line_and_path(line, said):
    found = problems(HEAD + line)
    assert len(found) == 1 and found[0].startswith(said), found


def test_waves_without_for_each_and_between_waves_without_waves_are_refused():
    text = HEAD.replace("        for_each: hosts\n", "") + "        waves: [1]\n"
    assert any("waves: only a for_each step takes it: add for_each, or remove it" in p for p in problems(text)), problems(text)
    text = HEAD + "        between_waves: {bake: 1m}\n"
    assert problems(text) == ["flows.yaml:10: task_types.t.steps[0].between_waves: the gate between a step's "
                              "waves: add waves, or remove it"]
