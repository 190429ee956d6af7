"""A step of the task document (docs/design/task-document.md): its definition, copied from its task
type's template when the task is created, its kind, and the state of its units.

`Step` is assembled from the fields every step has (a unit's state, its name, its place in the
graph, its kind) and the part each plug-in declares in its folder (`fields.py`): a command's
phases, a `for_each` step's list and items, a sub-flow's child, a step lock. Field names follow
the original spec (`Steps[].NormalModule`, ...) so a stored document reads against it. Times
are UNIX epoch seconds (float, UTC).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from common.engine.core.declared import declared_parts, placed_parts
from common.engine.core.unit_doc import BackoffPolicy, UnitState
from common.engine.kinds.command.fields import CommandFields
from common.engine.kinds.for_each.fields import ForEachFields, StepItem
from common.engine.kinds.sub_flow.fields import ChildTemplate, SubFlowFields

__all__ = ["BackoffPolicy", "ChildTemplate", "STATE_FIELDS", "Step", "StepItem", "UnitState", "implied_kind",
           "step_definition"]



# Each plug-in's part of the step document, last listed first in a stored document's fields.
# The first parts stand in the order stored documents have their fields: the first kinds' listed
# by name, and those whose folder declares their place among them (`STEP_PART_PLACE`: a step
# lock's); a kind or a gate added since declares its own (`STEP_PART` in its `fields.py`).
_LISTED = placed_parts(("common.engine.kinds", "common.engine.gates"), "STEP_PART",
                       (SubFlowFields, ForEachFields, CommandFields))
STEP_PARTS = (*declared_parts("common.engine.kinds", "STEP_PART", _LISTED),
              *declared_parts("common.engine.gates", "STEP_PART", _LISTED), *_LISTED)

# The kinds a step's fields imply: every step of a document written before `Kind` existed is one
# of them, and a step of one of them is written without `Kind`, as before.
IMPLIED_KINDS = frozenset({"command", "for_each", "sub_flow"})


def implied_kind(step: Any) -> str:
    """The kind a step's fields imply: what a step stored without `Kind` is."""
    return "for_each" if step.ForEach is not None or step.Source is not None else "sub_flow" if step.Flow is not None else "command"


def implied_kind_of(fields: dict[str, Any]) -> str:
    """implied_kind, of a step's fields as validated so far."""
    for_each = fields.get("ForEach") is not None or fields.get("Source") is not None
    return "for_each" if for_each else "sub_flow" if fields.get("Flow") is not None else "command"


class Step(*STEP_PARTS, UnitState):  # type: ignore[misc]
    # Added by baton:
    Name: str
    # The graph (docs/design/graph-and-routing.md, "The flow graph"): indices of the steps this one
    # waits for. None only in a template or an old document; Task fills it with "the step before".
    After: list[int] | None = None
    # The kind of step (common/engine/registry.py), declared by flows when it built the template;
    # derived from the fields when a step is read without it (a document written before it).
    # Written only for a kind the fields do not imply (a document stays as a process that
    # predates the field reads it). Last: its default reads the fields validated before it.
    Kind: str = Field(default_factory=lambda fields: implied_kind_of(fields),
                      exclude_if=lambda kind: kind in IMPLIED_KINDS)

    @property
    def has_rollback(self) -> bool:
        # A sub-flow step rolls back by rolling its child back.
        return self.RollbackModule is not None or self.Flow is not None


ChildTemplate.model_rebuild(_types_namespace={"Step": Step})


# Step fields that are state, not definition: the same in every template, left out of the hash.
# A unit's whole state (UnitState: a field added there is state too) and what a step adds to it.
# A declared part names its own (a ClassVar `STATE`).
STATE_FIELDS = frozenset(UnitState.model_fields) | {"Items", "ItemStore", "ItemCount", "ItemsOpen", "ItemsReopen", "FailedItems",
                                                    "ToleratedItems", "ChildTaskId", "Paging"} \
    | {name for part in STEP_PARTS for name in getattr(part, "STATE", ())}


def step_definition(step: Step) -> dict[str, Any]:
    """What a step template says, without its run-time state (nor a child's version label: a
    label alone changes nothing a task runs)."""
    shown = {k: v for k, v in step.model_dump(mode="json").items() if k not in STATE_FIELDS}
    if shown.get("FlowTemplate"):
        shown["FlowTemplate"] = {k: v for k, v in shown["FlowTemplate"].items() if k != "FlowVersion"}
    return shown
