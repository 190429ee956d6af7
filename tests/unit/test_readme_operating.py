"""The README's section on operating a task: its flows.yaml example loads, with its deadline,
and every `baton` command it shows exists with the options it uses."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from common.flows.loader import parse_flows
from oss.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def section() -> str:
    text = README.read_text()
    start = text.index("## Operating a task: pause, skip, deadline, after another task")
    return text[start:text.index("\n## ", start + 1)]


def test_the_flows_example_loads_with_its_deadline() -> None:
    (yaml_block,) = re.findall(r"```yaml\n(.*?)```", section(), re.S)
    catalog = parse_flows(yaml_block, "README.md", None)
    assert catalog.get("nightly_resize").deadline == 1800


def test_every_command_shown_parses() -> None:
    (sh_block,) = re.findall(r"```sh\n(.*?)```", section(), re.S)
    for line in sh_block.strip().splitlines():
        words = shlex.split(line, comments=True)
        assert words[0] == "baton"
        # --help after the arguments: click checks the command and its options, then stops.
        args = [w.replace("ID", "some-task") for w in words[1:]]
        result = CliRunner().invoke(main, [*args, "--help"])
        assert result.exit_code == 0, (line, result.output)
        for option in (w.split("=")[0] for w in args if w.startswith("--")):
            assert option in result.output, (line, option)
