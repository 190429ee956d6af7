"""A `for_each` step's `max_items` (flows.yaml): the longest list it fans out over.

One rule, checked twice: at submission, against the lists the client hands over (the API answers
422 naming the parameter and the limit, and nothing is written), and when the step opens, against
the list as it is then (a step's output may have made it; the step fails with the same words).
BATON_INPUT_MAX_ITEMS bounds every list a client hands over as well, since a list's items count
among the parameters' items in all (common/input_limits.py). docs/limits.md says why the figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from common.engine.document import Step


def over_limit(step: Step, values: Any) -> str | None:
    """Why `values` is too long for this step to fan out over, or None."""
    if step.MaxItems is None or not isinstance(values, list) or len(values) <= step.MaxItems:
        return None
    return (f"has {len(values)} items, more than the {step.MaxItems} step {step.Name!r} "
            f"fans out over (its max_items)")  # fmt: skip


def too_many_items(steps: Iterable[Step], parameters: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(path, message) for each list parameter longer than a step that fans out over it takes."""
    problems = []
    for step in steps:
        if step.ForEach and (problem := over_limit(step, parameters.get(step.ForEach))):
            problems.append((f"parameters.{step.ForEach}", problem))
    return problems
