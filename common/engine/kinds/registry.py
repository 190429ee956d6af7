"""The kinds of step, first match wins (common.engine.kinds.kind.StepKind)."""

from __future__ import annotations

from common.engine.document import Step
from common.engine.kinds.command import CommandKind
from common.engine.kinds.for_each import ForEachRecordsKind
from common.engine.kinds.kind import StepKind
from common.engine.kinds.sub_flow_kind import SubFlowKind

KINDS: tuple[StepKind, ...] = (ForEachRecordsKind(), SubFlowKind(), CommandKind())


def kind_of(step: Step) -> StepKind:
    return next(kind for kind in KINDS if kind.runs(step))
