"""Another system's callback for a command that waits for it (docs/design/callbacks.md,
docs/guide/callbacks.md): `POST /api/v1/callbacks/{token}`.

No API token: the callback token is the credential, so the route answers nothing of the task
(no id, no parameter, no state but the wait's own) and is guarded on its own: the body limit of
every route, the output within the parameters' limits, and a rate per client address (429), checked before
anything reads the request (oss/api/callback_gate.py).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from common.engine.commands import ANSWER_KEY
from common.flows.json_schema import PLAIN_KEY, STORED_JSON
from common.input_limits import FREE_TEXT_PATTERN
from oss.api.auth import Context
from oss.api.errors import ApiError
from oss.api.schemas import error_responses
from oss.services.callbacks import CallbackNotTaken

router = APIRouter(prefix="/api/v1", tags=["callbacks"])
MAX_TOKEN = 300  # a task id (at most 128 characters), a dot, the secret's 43


class CallbackBody(BaseModel):
    """What the other system reports."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["succeed", "fail", "heartbeat"] = Field(
        description="succeed: the step succeeds, `output` merged into the task's parameters; fail: the step "
        "fails (its retries, then its failure policy); heartbeat: it is still at work (the wait's heartbeat)")
    output: dict[str, Any] = Field(default_factory=dict, description="With succeed: merged as a command's output")
    message: str = Field("", description="With fail: why (in the task's message and history)")
    retryable: StrictBool = Field(True, description="With fail: whether the step's retries apply")


class CallbackAccepted(BaseModel):
    accepted: Literal["succeed", "fail", "heartbeat"]
    state: str = Field(description="The wait now: waiting, kept (its command has not returned yet: applied "
                                   "once it does), succeeded, failed, running (a heartbeat before the wait began)")


def document_callback_body(document: dict[str, Any], max_string: int) -> None:
    """Publish what the input limits take of a callback's body, as a task's free-form parameters
    are published: plain keys (not baton's own) holding stored JSON, and a bounded message. A
    client (or a fuzzer) that follows the document is then never refused for its form."""
    properties = document["components"]["schemas"]["CallbackBody"]["properties"]
    properties["output"].update(
        propertyNames={"allOf": [{"pattern": PLAIN_KEY}, {"not": {"enum": [ANSWER_KEY]}}]},
        additionalProperties={"$ref": f"#/components/schemas/{STORED_JSON}"},
    )
    properties["message"].update(maxLength=max_string, pattern=FREE_TEXT_PATTERN)


@router.post("/callbacks/{token}", response_model=CallbackAccepted, summary="Call back a step that waits for it",
             responses={**error_responses(404, 409, 413, 422, 503),
                        410: {"description": "The callback's wait is over (it timed out, its attempt ended)"},
                        429: {"description": "Too many callbacks from this address: Retry-After says when"}})
def callback(token: Annotated[str, Path(max_length=MAX_TOKEN)], body: CallbackBody, context: Context) -> CallbackAccepted:
    """The callback of a command that gave this token out and waits for it: no API token (the
    token is the credential). 404: no such token; 409: answered already; 410: its wait is over
    (it timed out, its attempt ended); 422: bad body, or an output key that is a secret
    parameter of the task; nothing changes then."""
    try:
        answered = context.service.callbacks.answer(token, body.action, body.output, body.message, body.retryable)
    except CallbackNotTaken as exc:
        raise ApiError(exc.status, str(exc), fields=[(exc.field, str(exc))] if exc.field else ()) from None
    return CallbackAccepted(accepted=body.action, state=answered.state)  # type: ignore[arg-type]
