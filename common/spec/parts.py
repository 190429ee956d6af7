"""A plug-in's part of flows.yaml (docs/design/engine.md, "A step kind is a folder"): the keys it
owns on a step, its checks across values, and how a validated step becomes its fields of the
step template. A kind of step or a gate holds its part in its folder (`spec.py`); common.flows
assembles the step's schema from every part the registry lists, asks each for its problems and
its fields, and names no kind.

The checks read the raw data (as common.flows' own checks do): they report alongside every
other problem, each with its line and path, and skip a value of the wrong type (the schema
reports that one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from common.spec.problems import Lines, Path, Problem


@dataclass(frozen=True)
class StepContext:
    """What a step's checks may read beside the step (raw data): the file's task types, its own
    task type and name, and its steps' names."""

    task_types: Mapping[str, Any]
    type_name: str
    task_type: Mapping[str, Any]
    names: list[Any]
    # The keys that declare a kind whose steps run no command of their own (`flow`, `approve`).
    no_command_keys: frozenset[str] = frozenset()

    @property
    def declared(self) -> dict[str, Any] | None:
        """The type's declared parameters; None when it declares none (anything goes)."""
        return mapping(self.task_type.get("parameters")) if "parameters" in self.task_type else None


class BuildContext(Protocol):
    """What a part may ask of the flows being built: the file's `defaults`, its `lock_modes`,
    and the template of another task type (a sub-flow's child, built first)."""

    defaults: Any
    lock_modes: Mapping[str, Mapping[str, bool]]

    def child_template(self, task_type: str) -> Any: ...


class FlowsPart:
    # The keys it owns on a step: name -> (type, default), as pydantic.create_model takes them.
    step_keys: ClassVar[dict[str, tuple[Any, Any]]] = {}
    # A kind's part: the step key whose presence declares a step of its kind (None: the kind a
    # step is when no part declares it).
    declared_by: ClassVar[str | None] = None
    # A kind's part: its steps run no command of their own (a child task, approvers do the work),
    # so a step it declares needs no `normal`.
    runs_no_command: ClassVar[bool] = False

    # A gate's part: the keys it owns on a task type, name -> (type, default). Each is built into a
    # template the task type keeps under the key (`task_templates`, read as `definition.<key>`),
    # covered by the type's content hash (`hashed`), and made at submission into the ask of the
    # gate whose `asks` is the key (`ask`).
    task_keys: ClassVar[dict[str, tuple[Any, Any]]] = {}

    def task_templates(self, task_type: Any) -> dict[str, Any]:
        """Its templates of a validated task type, by key (None: the key left out)."""
        return {}

    def hashed(self, task_type: Any) -> dict[str, Any]:
        """What of its task type keys the type's content hash covers, by key; a key left out is
        left out here too, so a type without it hashes as it did before the key existed."""
        return {}

    def key_parameters(self, template: Any) -> tuple[str, ...]:
        """The parameters a template's key names: a submission without one is refused naming it."""
        return ()

    def ask(self, template: Any, parameters: Mapping[str, Any], secret: list[str]) -> Any:
        """What a submission with these parameters asks of the gate (None: nothing). Raises the
        engine's LockKeyError when the key cannot be made of them."""
        return None

    def check_step(self, step: dict[str, Any], path: Path, context: StepContext, lines: Lines) -> list[Problem]:
        """The problems of one step's keys this part owns (raw data)."""
        return []

    def check_task(self, task_type: dict[str, Any], path: Path, lines: Lines) -> list[Problem]:
        """The problems of a task type's keys this part checks (raw data)."""
        return []

    def check_file(self, data: dict[str, Any], lines: Lines) -> list[Problem]:
        """The problems across the file (raw data): what no one step shows."""
        return []

    def step_fields(self, spec: Any, build: BuildContext) -> dict[str, Any]:
        """Its fields of the step template, from the validated step spec."""
        return {}

    def submission_problems(self, steps: Iterable[Any], parameters: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(path, message) for each problem of a submission's parameters against the steps."""
        return []


def find_cycle(edges: list[list[int]]) -> list[int] | None:
    """A cycle in the graph i -> edges[i], as a list of nodes, or None (iterative DFS)."""
    colour = [0] * len(edges)  # 0 new, 1 on the current path, 2 done
    for root in range(len(edges)):
        if colour[root]:
            continue
        path, stack = [root], [iter(edges[root])]
        colour[root] = 1
        while stack:
            node = next(stack[-1], None)
            if node is None:
                colour[path.pop()] = 2
                stack.pop()
            elif colour[node] == 1:
                return path[path.index(node):]
            elif colour[node] == 0:
                colour[node] = 1
                path.append(node)
                stack.append(iter(edges[node]))
    return None


def mapping(value: Any) -> dict[str, Any]:
    """A raw value as a mapping: {} when it is not one (the schema reports that)."""
    return value if isinstance(value, dict) else {}
