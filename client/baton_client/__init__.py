"""A typed Python client for baton's REST API: `BatonClient` (sync) and `AsyncBatonClient`.

Every call of the API is a method of both (see docs/guide/client.md in the baton repository):
submit, plan, get_task, list_tasks / iter_tasks, wait, events, the operator actions (cancel,
pause, resume, skip, retry, retry_rollback, compensate, redrive, rollback), a step's actions (act)
and callbacks (callback), bulk, migrate, list_items / iter_items,
alarms, hosts, modules and their drains, locks, schedules, health, ready and metrics.
"""

from baton_client.async_client import AsyncBatonClient
from baton_client.auth import Token
from baton_client.errors import (
    BatonError, Conflict, FieldError, Forbidden, Gone, InvalidInput, NotFound, OutcomeUnknown, RateLimited, ServerError,
    Unauthorized, Unavailable, WaitTimeout,
)  # fmt: skip
from baton_client.events import Change, Ended, Progress, TaskEvent, TaskShown
from baton_client.models import *  # noqa: F403  (every model is part of the public face)
from baton_client.models import __all__ as _models
from baton_client.retries import NO_RETRY, RetryPolicy
from baton_client.sync_client import BatonClient

__all__ = [
    "NO_RETRY", "AsyncBatonClient", "BatonClient", "BatonError", "Change", "Conflict", "Ended", "FieldError",
    "Forbidden", "Gone", "InvalidInput", "NotFound", "OutcomeUnknown", "RateLimited", "Progress", "RetryPolicy", "ServerError", "TaskEvent",
    "TaskShown", "Token", "Unauthorized", "Unavailable", "WaitTimeout", *_models,
]
