"""One fault found in flows.yaml, and how it is written: "<file>:<line>: <path>: <message>"."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from common.errors import FlowError

# A location inside the file: mapping keys and list indexes, e.g. ("task_types", "x", "steps", 0).
Path = tuple[str | int, ...]

ROOT = "(root)"  # the path shown for the document as a whole
SYNTAX = "(syntax)"  # the path shown for a YAML syntax error: there is no data to point into yet

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Problem:
    line: int  # 1-based, as editors show it
    where: str  # a formatted path, ROOT or SYNTAX
    message: str

    def render(self, filename: str) -> str:
        return f"{filename}:{self.line}: {self.where}: {self.message}"


def format_path(path: Path) -> str:
    """("task_types", "x", "steps", 1, "normal") -> "task_types.x.steps[1].normal"."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            text += f".{part}" if text else part
        else:  # a key with spaces or dashes stays readable and unambiguous when quoted
            text += f"[{json.dumps(part)}]"
    return text or ROOT


def at(line: int, path: Path, message: str) -> Problem:
    return Problem(line, format_path(path), message)


def raise_problems(filename: str, problems: Iterable[Problem]) -> None:
    """Raise one FlowError holding every problem, in file order; do nothing if there are none."""
    unique = list(dict.fromkeys(problems))  # the same fault can be found by two checks
    if unique:
        unique.sort(key=lambda problem: problem.line)  # stable: same-line problems keep their order
        raise FlowError([problem.render(filename) for problem in unique])
