"""One fault found in flows.yaml, and how it is written: "<file>:<line>: <path>: <message>"; where
each key and value of the file is written (`Lines`), and a value as the user wrote it."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

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


@dataclass
class Lines:
    """1-based lines by path: where each value starts, and where each mapping key is written."""

    values: dict[Path, int] = field(default_factory=dict)
    keys: dict[Path, int] = field(default_factory=dict)

    def value(self, path: Path) -> int:
        # A path the file lacks (a missing key, say) falls back to its nearest existing parent.
        while path not in self.values and path:
            path = path[:-1]
        return self.values.get(path, 1)

    def key(self, path: Path) -> int:
        return self.keys.get(path) or self.value(path)


def describe(value: Any) -> str:
    """A value as the user would recognise it in the YAML file."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return repr(value)  # a date, say
