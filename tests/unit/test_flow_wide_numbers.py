"""A whole number in flows.yaml that no store can hold (past 64 bits) is refused where it is
written, with its line and path, whichever key holds it: a step's sizes and counts, a phase's
retries, a lock's limit, a parameter's default or bounds. Accepted, it would load, and then every
submission of the type would be refused by the store (MongoDB holds 8-byte integers)."""

from __future__ import annotations

import pytest

from tests.unit.test_flows import problems

WIDE = 2**63  # one past the largest 64-bit integer
HEAD = """\
version: 1
task_types:
  t:
    parameters:
      hosts: {type: array}
"""
CASES = {
    "a wave's size": ("steps[0].waves", "    steps:\n      - name: a\n        for_each: hosts\n"
                      "        normal: {module: m, command: c}\n        waves: [1, %d]\n"),
    "max_parallel": ("steps[0].max_parallel", "    steps:\n      - name: a\n        for_each: hosts\n"
                     "        normal: {module: m, command: c}\n        max_parallel: %d\n"),
    "a budget's count": ("steps[0].tolerate.count", "    steps:\n      - name: a\n        for_each: hosts\n"
                         "        normal: {module: m, command: c}\n        tolerate: {count: %d}\n"),
    "a phase's retry": ("steps[0].normal.retry", "    steps:\n      - name: a\n"
                        "        normal: {module: m, command: c, retry: %d}\n"),
    "a lock's limit": ("lock.limit", "    lock: {key: \"k\", limit: %d}\n    steps:\n      - name: a\n"
                       "        normal: {module: m, command: c}\n"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_number_past_64_bits_is_refused_with_its_line_and_path(case: str) -> None:
    path, tail = CASES[case]
    text = HEAD + tail % WIDE
    line = 1 + text.splitlines().index(next(t for t in text.splitlines() if str(WIDE) in t))
    found = problems(text)
    assert len(found) == 1, found
    assert found[0].startswith(f"flows.yaml:{line}: task_types.t.{path}: "), found
    assert "64 bits" in found[0] and str(WIDE) in found[0], found


def test_the_largest_64_bit_number_is_taken() -> None:
    from common.flows import parse_flows

    text = HEAD + "    steps:\n      - name: a\n        normal: {module: m, command: c, retry: %d}\n" % (WIDE - 1)
    assert parse_flows(text, "flows.yaml").task_types["t"].steps[0].NormalRetry == WIDE - 1


@pytest.mark.parametrize("key", ["default", "maximum"])
def test_a_parameters_number_past_64_bits_is_refused(key: str) -> None:
    text = HEAD.replace("hosts: {type: array}", f"n: {{type: integer, {key}: {WIDE}}}") + \
        "    steps:\n      - name: a\n        normal: {module: m, command: c}\n"
    found = problems(text)
    assert any(p.startswith(f"flows.yaml:5: task_types.t.parameters.n.{key}: ") and "64 bits" in p for p in found), found
