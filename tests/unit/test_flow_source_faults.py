"""flows.yaml's `for_each: {source: ...}` (docs/design/item-sources.md): each fault reported as its
exact "file:line: path: message", and a valid one built into the step's fields."""

from __future__ import annotations

import pytest

from common.engine.kinds.for_each.source.fields import ItemSource
from tests.unit.test_flows import only_step, problems

STEP = """\
version: 1
task_types:
  t:
    steps:
      - name: a
        for_each:
          source: {module: m, command: c%s}
%s        normal: {module: m, command: c}
"""
PARALLEL = "        max_parallel: 5\n"
WHERE = "flows.yaml:7: task_types.t.steps[0].for_each"

CASES = {
    "no max_parallel": (STEP % ("", ""), [
        "flows.yaml:6: task_types.t.steps[0].for_each: items from a source need max_parallel "
        "(they arrive a page at a time): add max_parallel"]),
    "page_size 0": (STEP % (", page_size: 0", PARALLEL), [f"{WHERE}.source.page_size: must be >= 1 (got 0)"]),
    "page_size too big": (STEP % (", page_size: 6000", PARALLEL),
                          [f"{WHERE}.source.page_size: must be <= 5000 (got 6000)"]),
    "unknown key in the source": (STEP % (", pages: 3", PARALLEL), [
        f'{WHERE}.source.pages: unknown key; did you mean "page_size"? allowed keys here: module, command, page_size']),
    "with a step lock": (STEP % ("", PARALLEL + "        lock: {key: k}\n"), [
        "flows.yaml:6: task_types.t.steps[0].for_each: a for_each over a source is not supported with lock: "
        "its items live in records"]),
    "no command": (STEP.replace(", command: c%s}", "}") % PARALLEL,
                   [f"{WHERE}.source.command: required key is missing"]),
    "a mapping without source": (STEP.replace("          source: {module: m, command: c%s}\n", "").replace(
        "for_each:\n", "for_each: {src: x}\n") % PARALLEL, [
        "flows.yaml:6: task_types.t.steps[0].for_each.source: required key is missing",
        'flows.yaml:6: task_types.t.steps[0].for_each.src: unknown key; did you mean "source"? allowed keys here: source']),
    "a number": (STEP.replace("          source: {module: m, command: c%s}\n", "").replace(
        "for_each:\n", "for_each: 5\n") % PARALLEL, ["flows.yaml:6: task_types.t.steps[0].for_each: must be text (got 5)"]),
}


@pytest.mark.parametrize("name", CASES)
def test_a_source_fault_is_named_with_its_line_and_path(name):
    text, expected = CASES[name]
    assert problems(text) == expected


def test_a_source_is_built_into_the_step():
    step = only_step(STEP % (", page_size: 200", PARALLEL))
    assert step.Source == ItemSource(Module="m", Command="c", PageSize=200)
    assert step.ForEach is None and step.Kind == "for_each" and step.MaxParallel == 5
    assert "Kind" not in step.model_dump(exclude_defaults=False)  # the fields imply the kind


def test_a_source_command_its_module_does_not_serve_is_named():
    text = STEP.replace("command: c%s}", "command: hosts%s}") % ("", PARALLEL)
    found = problems(text, known={"m": {"c"}})  # it serves the items' command, not the source's
    assert len(found) == 1 and 'no command "hosts"' in found[0], found


def test_waves_over_a_source_are_built_into_the_step():
    step = only_step(STEP % ("", PARALLEL + '        waves: [100, "10%", rest]\n'))
    assert step.Source is not None and [w.Size for w in step.Waves] == [100, "10%", "rest"]


def test_a_wrong_wave_over_a_source_is_named_with_its_line_and_path():
    assert problems(STEP % ("", PARALLEL + '        waves: [0, rest]\n')) == [
        'flows.yaml:9: task_types.t.steps[0].waves[0].size: must be a number of items (>= 1), a percentage like "10%" '
        '(above 0, at most 100) or "rest" (got 0)']
