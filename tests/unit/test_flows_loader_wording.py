"""The flows loader's messages for the keys of waves, tolerate, a source, an approval and a rate:
each reads as a sentence after its file, line and path. None repeats the key its path ends
with ("waves: waves only ..."), and each names what to do. A step that takes a key it cannot use
(an approval step's rate) is refused as well."""

from __future__ import annotations

import re

import pytest

from common.flows import parse_flows
from tests.unit.test_flows import problems

FLOWS = """\
version: 1
task_types:
  t:
    parameters:
      hosts: {type: array}
%s
    steps:
      - name: a
        normal: {module: m, command: c}
      - name: each
%s
"""
EACH = "        for_each: hosts\n        normal: {module: m, command: c}\n"
SOURCE = "        for_each: {source: {module: m, command: c%s}}\n        normal: {module: m, command: c}\n"
STEPS = {
    "rest before the last wave": EACH + "        waves: [rest, 10]",
    "no wave": EACH + "        waves: []",
    "a wave of 0": EACH + "        waves: [0]",
    "a pause's on_timeout alone": EACH + "        waves: [{size: 2, pause: {on_timeout: fail}}]",
    "a wave's tolerate of both": EACH + "        waves: [{size: 2, tolerate: {count: 1, percent: 2}}]",
    "between_waves alone": EACH + "        between_waves: {bake: 1m}",
    "waves without for_each": "        normal: {module: m, command: c}\n        waves: [1]",
    "tolerate without for_each": "        normal: {module: m, command: c}\n        tolerate: {count: 1}",
    "tolerate of both": EACH + "        tolerate: {count: 1, percent: 3}",
    "tolerate of neither": EACH + "        tolerate: {}",
    "waves with a step lock": EACH + "        waves: [1]\n        lock: {key: k}",
    "a source without max_parallel": SOURCE % "",
    "a source's page_size 0": SOURCE % ", page_size: 0" + "        max_parallel: 2",
    "a source with a lock": SOURCE % "" + "        max_parallel: 2\n        lock: {key: k}",
    "approve count 0": "        approve: {count: 0}",
    "approve on_timeout alone": "        approve: {count: 2, on_timeout: approve}",
    "approve with a command": "        approve: {count: 2}\n        normal: {module: m, command: c}",
    "approve with a lock": "        approve: {count: 2}\n        lock: {key: k}",
    "approve with a rate": "        approve: {count: 1}\n        rate: {key: x, limit: 1, per: 1m}",
    "a step rate's limit 0": "        normal: {module: m, command: c}\n        rate: {key: x, limit: 0, per: 1m}",
    "a for_each step's rate": EACH + "        rate: {key: x, limit: 1, per: 1m}",
    "a step rate with a lock": "        normal: {module: m, command: c}\n        rate: {key: x, limit: 1, per: 1m}\n"
                               "        lock: {key: k}",
}
TASK = {
    "a task rate's per 0": "    rate: {key: x, limit: 3, per: 0s}",
    "a task rate without key": "    rate: {limit: 3, per: 1m}",
}
PROBLEM = re.compile(r"^flows\.yaml:\d+: (?P<path>[^ ]+): (?P<message>.+)$")


def _found(text: str) -> list[str]:
    return problems(text)


@pytest.mark.parametrize("text", [FLOWS % ("", step) for step in STEPS.values()]
                         + [FLOWS % (task, "        normal: {module: m, command: c}") for task in TASK.values()],
                         ids=[*STEPS, *TASK])  # fmt: skip
def test_each_message_reads_after_its_path_without_repeating_its_key(text: str) -> None:
    found = _found(text)
    assert found, "refused"
    for problem in found:
        parts = PROBLEM.match(problem)
        assert parts, problem
        key = re.sub(r"\[\d+\]$", "", parts["path"].rsplit(".", 1)[-1])
        first = parts["message"].split(" ", 1)[0].rstrip(":")
        assert first != key, f"repeats its key: {problem}"


def test_the_messages_say_what_to_do() -> None:
    said = {name: _found(FLOWS % ("", step)) for name, step in STEPS.items()}
    assert said["rest before the last wave"][0].endswith('waves: only the last wave may be "rest": it takes every item left')
    assert said["no wave"][0].endswith("waves: give at least one wave")
    assert said["between_waves alone"][0].endswith("between_waves: the gate between a step's waves: add waves, or remove it")
    assert said["waves without for_each"][0].endswith("waves: only a for_each step takes it: add for_each, or remove it")
    assert said["a source without max_parallel"][0].endswith(
        "for_each: items from a source need max_parallel (they arrive a page at a time): add max_parallel")
    assert said["approve on_timeout alone"][0].endswith("approve.on_timeout: needs a timeout: add approve.timeout")
    assert said["approve with a rate"] == [
        "flows.yaml:12: task_types.t.steps[1].rate: an approval step (approve) takes no rate (it runs nothing): remove it"]
    assert said["approve with a lock"][0].endswith("lock: an approval step (approve) holds no lock (it runs nothing): remove it")


def test_a_good_step_of_each_kind_still_loads() -> None:
    text = FLOWS % ("    rate: {key: x, limit: 3, per: 1m}", EACH + "        waves: [1, rest]\n        tolerate: {count: 1}")
    assert parse_flows(text, "flows.yaml").task_types["t"].steps[1].Waves is not None
