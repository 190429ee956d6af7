"""The field a step's own rate is kept in (docs/design/rates.md, "Step rates"): left out when the
step declares none, so such a step is written, and hashed, exactly as before rates existed."""

from __future__ import annotations

from pydantic import Field

from common.engine.core.doc_base import Doc
from common.engine.gates.rate.documents import RateTemplate


class StepRateFields(Doc):
    Rate: RateTemplate | None = Field(None, exclude_if=lambda rate: rate is None)
