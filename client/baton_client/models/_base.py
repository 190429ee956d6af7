"""The two kinds of model: what the API answers, and what the client sends.

An answer ignores fields it does not know: a newer OSS may add one, and an older client must
still read the task. A request forbids them: a misspelt keyword is an error here, not a 422
later. The tests compare both with the OpenAPI document OSS serves, field by field.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Request(BaseModel):
    # Its JSON schema (serialization) marks what is always sent: a field with a default too.
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)
