"""Whole numbers in flows.yaml that no store can hold: past 64 bits.

YAML reads `99999999999999999999` as a Python int of any size, and the schema's bounds are only
lower ones (`retry >= 0`, a wave's size >= 1). Such a number would load, reach the task document
and make every submission of the type fail in the store (MongoDB holds 8-byte integers). So the
whole file is walked once, before the schema, and each one is reported where it is written,
whatever key holds it (a key added later is covered without a bound of its own)."""

from __future__ import annotations

from typing import Any

from common.input_limits import INT64_MAX, INT64_MIN
from common.spec.problems import Lines, Path, Problem, at

MESSAGE = "must be a whole number within 64 bits (-9223372036854775808 to 9223372036854775807)"


def wide_numbers(data: Any, lines: Lines) -> list[Problem]:
    problems: list[Problem] = []
    stack: list[tuple[Any, Path]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            stack.extend((value, (*path, key)) for key, value in node.items() if isinstance(key, (str, int)))
        elif isinstance(node, list):
            stack.extend((value, (*path, index)) for index, value in enumerate(node))
        elif isinstance(node, int) and not isinstance(node, bool) and not INT64_MIN <= node <= INT64_MAX:
            shown = path[:-1] if path and isinstance(path[-1], int) else path  # a list's member: the list's path
            problems.append(at(lines.value(path), shown, f"{MESSAGE} (got {node})"))
    return problems
