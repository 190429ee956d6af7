"""The base of the engine's documents: they are written by baton itself, so a field it does not
know is a mistake to report, never one to carry silently; and an operator's request, which
several of them record."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Doc(BaseModel):
    # Documents we wrote ourselves: reject unknown fields so a typo never goes unnoticed; inf/nan
    # survive a JSON round trip (as Infinity/NaN) like they do through json.dumps.
    model_config = ConfigDict(extra="forbid", validate_assignment=False, ser_json_inf_nan="constants")


class OperatorRequest(Doc):
    """An operator's request recorded on a task: who asked, why, and when."""

    Actor: str
    Reason: str
    Time: float
