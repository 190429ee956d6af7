"""The README's section on operating a task: its flows.yaml example loads, with its deadline
(its `baton` commands are checked with every other one the README shows: test_readme_commands.py)."""

from __future__ import annotations

import re
from pathlib import Path

from common.flows.loader import parse_flows

README = Path(__file__).resolve().parents[2] / "README.md"


def section() -> str:
    text = README.read_text()
    start = text.index("## Operating a task: pause, skip, deadline, after another task")
    return text[start:text.index("\n## ", start + 1)]


def test_the_flows_example_loads_with_its_deadline() -> None:
    (yaml_block,) = re.findall(r"```yaml\n(.*?)```", section(), re.S)
    catalog = parse_flows(yaml_block, "README.md", None)
    assert catalog.get("nightly_resize").deadline == 1800

