"""flows.yaml as plain data plus the line of every key and value, built from PyYAML's node tree.

PyYAML's constructor forgets where each value was written and silently keeps the last of two
equal keys. Composing the node tree and building the data ourselves keeps the lines (for error
messages) and lets us report duplicate keys. Scalars are still typed by PyYAML's SafeLoader rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from common.spec.problems import SYNTAX, Lines, Path, Problem, at

# `<<: *anchor` merges a mapping; resolved here since we bypass the constructor that does it.
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass
class YamlSource:
    data: Any  # None for an empty file or a syntax error
    lines: Lines
    problems: list[Problem]
    # Paths of values already reported as unreadable (kept as None): other checks skip them,
    # since "must be a number (got nothing)" would only repeat the same fault less clearly.
    unreadable: set[str] = field(default_factory=set)


def read_yaml(text: str) -> YamlSource:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        return YamlSource(None, Lines(), [_syntax_problem(error)])
    if root is None:
        return YamlSource(None, Lines(), [])
    builder = _Builder()
    data = builder.build(root, ())
    return YamlSource(data, builder.lines, builder.problems, builder.unreadable)


def _syntax_problem(error: yaml.YAMLError) -> Problem:
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        message = (error.problem or "invalid YAML").removeprefix("but ")
        if error.context:  # what the parser was in the middle of, and where that began
            where = f", line {error.context_mark.line + 1}" if error.context_mark else ""
            message += f" ({error.context}{where})"
        return Problem(error.problem_mark.line + 1, SYNTAX, message)
    return Problem(1, SYNTAX, str(error))  # e.g. a control character the reader rejects


def _line(node: Node) -> int:
    return node.start_mark.line + 1


class _Builder:
    def __init__(self) -> None:
        self.lines = Lines()
        self.problems: list[Problem] = []
        self._scalars = yaml.SafeLoader("")  # used only to type scalars the way yaml.safe_load does
        self.unreadable: set[str] = set()
        self._open: set[int] = set()  # nodes being built: an alias to one of them would never end

    def build(self, node: Node, path: Path) -> Any:
        self.lines.values[path] = _line(node)
        if id(node) in self._open:
            return self._unreadable(node, path, "an alias may not refer to a node containing it")
        self._open.add(id(node))
        try:
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
            if isinstance(node, SequenceNode):
                return [self.build(item, path + (index,)) for index, item in enumerate(node.value)]
            return self._scalar(node, path)
        finally:
            self._open.discard(id(node))

    def _scalar(self, node: Node, path: Path) -> Any:
        try:
            return self._scalars.construct_object(node, deep=True)
        except yaml.YAMLError as error:  # an unknown tag such as `!foo` or `!!python/object`
            problem = getattr(error, "problem", None) or str(error)
            return self._unreadable(node, path, f"cannot read this value: {problem}")

    def _unreadable(self, node: Node, path: Path, message: str) -> None:
        problem = at(_line(node), path, message)
        self.problems.append(problem)
        self.unreadable.add(problem.where)

    def _mapping(self, node: MappingNode, path: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, (key_node, value_node) in self._entries(node, path, report=True).items():
            self.lines.keys[path + (key,)] = _line(key_node)
            result[key] = self.build(value_node, path + (key,))
        return result

    def _entries(
        self, node: MappingNode, path: Path, *, report: bool
    ) -> dict[str, tuple[Node, Node]]:
        """Key -> (key node, value node), merge keys resolved: written keys win over merged ones.

        `report` is off for a merged mapping: its faults are reported where it is written.
        Keys are kept as written (`on:` stays "on", not True): every key in this format is a name.
        """
        own: dict[str, tuple[Node, Node]] = {}
        first_line: dict[str, int] = {}
        merged: dict[str, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                for source in self._merge_sources(value_node, path, report):
                    for key, pair in self._entries(source, path, report=False).items():
                        merged.setdefault(key, pair)  # the first mapping merged wins, as in YAML
                continue
            if not isinstance(key_node, ScalarNode):
                if report:
                    self.problems.append(at(_line(key_node), path, "a key must be a plain name"))
                continue
            key = key_node.value
            if key in first_line:
                if report:
                    message = f"duplicate key: first defined on line {first_line[key]}"
                    self.problems.append(at(_line(key_node), path + (key,), message))
            else:
                first_line[key] = _line(key_node)
            own[key] = (key_node, value_node)  # the last one wins, as with yaml.safe_load
        for key, pair in merged.items():
            own.setdefault(key, pair)
        return own

    def _merge_sources(self, node: Node, path: Path, report: bool) -> list[MappingNode]:
        if id(node) in self._open:
            return []
        if isinstance(node, MappingNode):
            return [node]
        if isinstance(node, SequenceNode) and all(isinstance(n, MappingNode) for n in node.value):
            return list(node.value)
        if report:
            self.problems.append(
                at(_line(node), path, "'<<' must merge a mapping or a list of mappings")
            )
        return []
