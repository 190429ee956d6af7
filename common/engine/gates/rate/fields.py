"""The fields the rate gate keeps (docs/design/rates.md): a task's rate in the task document
(`TASK_PART`), a step's own rate in the step document (`STEP_PART`, common.engine.gates.rate.step_fields),
a sub-flow's child type's rate in the child template its parent carries (`CHILD_PART`), each left
out when none is declared, so such a document is written exactly as before rates existed."""

from __future__ import annotations

from pydantic import Field

from common.engine.core.doc_base import Doc
from common.engine.gates.rate.documents import RateTemplate, TaskRate
from common.engine.gates.rate.step_fields import StepRateFields


class RateFields(Doc):
    Rate: TaskRate | None = Field(None, exclude_if=lambda rate: rate is None)


class ChildRateFields(Doc):
    # The child type's own rate, keyed by the child's parameters.
    Rate: RateTemplate | None = Field(None, exclude_if=lambda rate: rate is None)


TASK_PART = RateFields
STEP_PART = StepRateFields
CHILD_PART = ChildRateFields
