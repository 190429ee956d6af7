"""The fields of the step document an approval step declares: its rule (how many approvers,
which roles, whether the submitter may be one, its timeout) and the decisions taken so far.

Both are left out of a stored step while empty, so a step of another kind is written as before.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from common.engine.core.doc_base import Doc

APPROVE, REJECT = "approve", "reject"


class ApprovalRule(Doc):
    """What an approval step asks for (flows.yaml `approve:`)."""

    Count: int = 1  # distinct approvers needed
    Roles: list[str] = Field(default_factory=lambda: ["operator"])  # an approver's token has one of these
    NotSubmitter: bool = False  # the token that submitted the task may not approve it
    Timeout: float | None = None  # seconds it waits; None: as long as it takes
    OnTimeout: Literal["reject", "approve"] = REJECT


class Decision(Doc):
    """One person's decision: who, which, why and when (the history says it too)."""

    Actor: str
    Decision: Literal["approve", "reject"]
    Reason: str
    Time: float


class ApproveFields(Doc):
    # What it decides: their values are state, not definition (left out of a flow's hash).
    STATE: ClassVar[frozenset[str]] = frozenset({"Decisions"})

    Approve: ApprovalRule | None = Field(None, exclude_if=lambda rule: rule is None)
    Decisions: list[Decision] = Field(default_factory=list, exclude_if=lambda decisions: not decisions)


STEP_PART = ApproveFields
