"""The fields of the step document a sub-flow step declares: the child's task type, how its
parameters come from the parent's, the child's template, and the child it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from common.engine.core.declared import declared_parts
from common.engine.core.doc_base import Doc
from common.engine.gates.lock.documents import LockTemplate

if TYPE_CHECKING:
    from common.engine.core.step_doc import Step  # resolved where Step is assembled (model_rebuild)


class ChildTemplateCore(Doc):

    TaskType: str
    Steps: list[Step]
    Defaults: dict[str, Any] = Field(default_factory=dict)
    SecretParameters: list[str] = Field(default_factory=list)
    Lock: LockTemplate | None = None  # the child type's own lock, keyed by the child's parameters
    FlowVersion: str | None = None  # the child type's flows.yaml `version:`
    FlowHash: str | None = None  # the child type's content hash (common/flows/versions.py)


# Each gate's template of the child type (`CHILD_PART` in its folder's `fields.py`, found by
# folder: a rate's), carried to the child's creation (common.engine.registry.child_asks).
CHILD_PARTS = declared_parts("common.engine.gates", "CHILD_PART")


class ChildTemplate(*CHILD_PARTS, ChildTemplateCore):  # type: ignore[misc]
    """What a sub-flow step needs to create its child task without reading flows.yaml again:
    the child type's steps (copied when the parent was created), defaults and secrets, and what
    its gates ask."""


class SubFlowFields(Doc):
    Flow: str | None = None  # a sub-flow step: the child's task type
    FlowInputs: dict[str, str] = Field(default_factory=dict)  # child parameter -> parent's
    FlowTemplate: ChildTemplate | None = None
    ChildTaskId: str | None = None
