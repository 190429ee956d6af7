"""The two shapes of an outbox entry's body (common.engine.outbox), apart so a plug-in's
`declares.py` builds its bodies on them without importing the engine: one whose fields are all
named, and one whose rest is another document."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OpenBody(BaseModel):
    """A body whose rest is another document (a step message, a child task, a webhook payload)."""

    model_config = ConfigDict(extra="allow", frozen=True)
