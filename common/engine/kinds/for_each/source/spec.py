"""A source's part of flows.yaml (docs/design/item-sources.md): `for_each: {source: {module,
command, page_size}}`, a form of the `for_each` key, its checks, and the step's `Source` it builds."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from common.engine.kinds.for_each.source.fields import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ItemSource
from common.engine.kinds.for_each.spec_part import ForEachSpecPart
from common.spec.keys import Identifier, Spec
from common.spec.problems import Lines, Path, Problem, at


class SourceSpec(Spec):
    """A module's command that returns the items a page at a time (docs/design/item-sources.md)."""

    module: Identifier
    command: Identifier
    page_size: Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE)] = DEFAULT_PAGE_SIZE


class ForEachSourceSpec(Spec):
    """`for_each: {source: {...}}`: the items come from a source instead of a list parameter."""

    source: SourceSpec


class SourcePart(ForEachSpecPart):
    # A mapping under `for_each` is a source ("~": a form's tag, no key: common.flows.messages).
    form = ("~source", ForEachSourceSpec)

    def takes_form(self, value: Any) -> bool:
        return isinstance(value, dict)

    def check_form(self, step: dict[str, Any], path: Path, lines: Lines) -> list[Problem]:
        """Its chains are fixed when it opens, a page at a time, and its items live in records."""
        problems = []
        for needed in ("max_parallel",):
            if needed not in step:
                where = path + ("for_each",)
                problems.append(at(lines.key(where), where, f"items from a source need {needed} (they arrive "
                                   f"a page at a time): add {needed}"))
        for inline in ("flow", "lock"):
            if inline in step:
                where = path + ("for_each",)
                problems.append(at(lines.key(where), where, f"a for_each over a source is not supported "
                                   f"with {inline}: its items live in records"))
        return problems

    def step_fields(self, spec: Any) -> dict[str, Any]:
        over = spec.for_each
        return {"Source": None if not isinstance(over, ForEachSourceSpec) else ItemSource(
            Module=over.source.module, Command=over.source.command, PageSize=over.source.page_size)}


PART = SourcePart()
