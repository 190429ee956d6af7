"""A new task's steps come from FlowDefinition.new_steps: equal to the task type's templates, and
the task's own (a change to one reaches neither the template nor another task)."""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Iterator
from pathlib import Path

from common.engine.changes import Timing, create_task
from common.flows import parse_flows

FLOWS = """
version: 1
task_types:
  two:
    steps:
      - name: a
        normal:   {module: resource, command: noop, timeout: 30, retry: 0}
        rollback: {module: resource, command: noop_rollback, timeout: 30, retry: 0}
      - name: b
        normal:   {module: mysql, command: noop, timeout: 30, retry: 0}
"""


def test_new_steps_equal_the_templates_and_share_nothing_with_them() -> None:
    flow = parse_flows(FLOWS, "flows.yaml").get("two")
    first, second = flow.new_steps(), flow.new_steps()
    assert first == flow.steps == second
    first[0].NormalBackoff.Initial = 99.0
    first[1].FlowInputs["x"] = "y"
    assert flow.steps[0].NormalBackoff.Initial != 99.0 and second[0].NormalBackoff.Initial != 99.0
    assert "x" not in flow.steps[1].FlowInputs and "x" not in second[1].FlowInputs


def test_a_task_made_from_new_steps_is_the_task_made_from_the_templates() -> None:
    flow = parse_flows(FLOWS, "flows.yaml").get("two")
    timing = Timing(time.time())
    ids = iter(f"id-{n}" for n in range(100))
    again = iter(f"id-{n}" for n in range(100))
    copied = create_task(task_type="two", steps=flow.steps, parameters={}, timing=timing, ids=lambda: next(ids))
    owned = create_task(task_type="two", steps=flow.new_steps(), own_steps=True, parameters={}, timing=timing,
                        ids=lambda: next(again))  # fmt: skip
    assert owned == copied


def _mutable_ids(value: object, seen: set[int]) -> set[int]:
    """The ids of every mutable object reachable from `value` (lists, dicts, sets, models)."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        seen.add(id(value))
        _mutable_ids(value.__dict__, seen)
        seen.add(id(value.__pydantic_fields_set__))
    elif isinstance(value, (list, dict, set)):
        seen.add(id(value))
        for item in (value.values() if isinstance(value, dict) else value):
            _mutable_ids(item, seen)
    elif isinstance(value, tuple):
        for item in value:
            _mutable_ids(item, seen)
    return seen


def _flows_written() -> Iterator[tuple[str, str]]:
    """Every flows.yaml a user or a test writes: the repository's, the docs' `yaml flows` blocks,
    and the tests' flows constants (module-level strings, joined with `+` as they are)."""
    root = Path(__file__).parents[2]
    yield "flows.yaml", (root / "flows.yaml").read_text()
    for path in sorted((root / "docs").rglob("*.md")):
        for number, block in enumerate(re.findall(r"```yaml flows\n(.*?)```", path.read_text(), re.S)):
            yield f"{path.name} block {number}", block
    for path in sorted((root / "tests").rglob("*.py")):
        known: dict[str, str] = {}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                text = _text(node.value, known)
                if text is not None:
                    known[node.targets[0].id] = text
                    if "task_types:" in text:
                        yield f"{path.name} {node.targets[0].id}", text


def _text(node: ast.expr, known: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left, known), _text(node.right, known)
        return left + right if left is not None and right is not None else None
    return None


def test_new_steps_are_what_reading_their_json_gives_and_share_nothing_mutable() -> None:
    from common.engine.document import Step

    parsed = []
    for where, text in _flows_written():
        try:
            parsed.append((where, parse_flows(text, "flows.yaml")))
        except Exception:  # a test's flows written to be refused
            continue
    assert len(parsed) > 50  # every kind of step, in the shapes users and tests write them
    for where, flows in parsed:
        for flow in flows.task_types.values():
            read = [Step.model_validate_json(step.model_dump_json()) for step in flow.steps]
            first, second = flow.new_steps(), flow.new_steps()
            for made, expected in zip(first, read):
                assert type(made) is Step, (where, flow.name)
                assert list(made.__dict__.items()) == list(expected.__dict__.items()), (where, flow.name)  # values, order
                assert made.model_fields_set == expected.model_fields_set, (where, flow.name)
                assert made.model_dump_json() == expected.model_dump_json(), (where, flow.name)
            assert not _mutable_ids(first, set()) & _mutable_ids(second, set()), (where, flow.name)
            assert not _mutable_ids(first, set()) & _mutable_ids(flow.steps, set()), (where, flow.name)


def test_a_value_no_plan_knows_leaves_the_copy_to_the_json_way() -> None:
    import pytest
    from pydantic import BaseModel

    from common.flows.step_copies import NoPlan, copier_of

    class Odd(BaseModel):
        Tags: set[str]
        Pair: tuple[list[int], int]

    with pytest.raises(NoPlan):
        copier_of(Odd(Tags={"a"}, Pair=([1], 2)))
