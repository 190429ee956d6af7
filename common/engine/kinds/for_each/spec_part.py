"""What an extension of the `for_each` kind adds to the kind's part of flows.yaml
(for_each/spec.py): keys of a step, a form of the `for_each` key, their checks and its fields of
the template. Each extension's `spec.py` holds one as `PART`, found by folder."""

from __future__ import annotations

from typing import Any, ClassVar

from common.spec.parts import StepContext
from common.spec.problems import Lines, Path, Problem


class ForEachSpecPart:
    # Its keys of a step: name -> (type, default), after the kind's own.
    step_keys: ClassVar[dict[str, tuple[Any, Any]]] = {}
    # Of them, those that limit a for_each step (refused on a step without `for_each`), and those
    # whose items must be kept in records (refused beside `flow` or `lock`).
    needs_for_each: ClassVar[tuple[str, ...]] = ()
    needs_records: ClassVar[tuple[str, ...]] = ()
    # A form of the `for_each` key besides a list parameter's name: (its tag, its type), or None.
    form: ClassVar[tuple[str, Any] | None] = None

    def takes_form(self, value: Any) -> bool:
        """Whether a raw `for_each` value is written in its form."""
        return False

    def check_form(self, step: dict[str, Any], path: Path, lines: Lines) -> list[Problem]:
        """The problems of a step whose `for_each` is written in its form."""
        return []

    def check_step(self, step: dict[str, Any], path: Path, context: StepContext, lines: Lines) -> list[Problem]:
        """The problems of its keys across values (each with its line and path)."""
        return []

    def step_fields(self, spec: Any) -> dict[str, Any]:
        """Its fields of the step template, from the validated step."""
        return {}
