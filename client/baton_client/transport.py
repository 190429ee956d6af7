"""What both clients share around the wire: their httpx options, how a transport failure is
classed and reported, what follows one try of a call (its result, an error, or a retry), and the
log line of a retry (stdlib logging, logger "baton_client").

A log line names the call's method and path, the attempt and the delay; never a header (the
token), a query string or a body.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx

from baton_client.auth import BearerAuth, Token
from baton_client.call import Call
from baton_client.errors import BatonError, OutcomeUnknown, Unavailable, error_for_answer
from baton_client.retries import Failure, RetryPolicy, retry_delay

log = logging.getLogger("baton_client")
log.addHandler(logging.NullHandler())  # a library logs; the application decides where to
# The event stream's read timeout: the server sends a keep-alive comment every 15 s at least.
STREAM_READ_SECONDS = 60.0
URL_VARIABLE, TOKEN_VARIABLE = "BATON_API_URL", "BATON_API_TOKEN"  # as `baton watch --api` reads them
T = TypeVar("T")


def http_options(base_url: str, token: str | Token | None, timeout: float,
                 extra: Mapping[str, Any] | None) -> dict[str, Any]:  # fmt: skip
    """The keyword arguments of httpx.Client / AsyncClient. `extra` passes anything else httpx
    takes (verify, cert, proxy, event_hooks, transport...)."""
    if not base_url.startswith(("http://", "https://")):
        raise ValueError("base_url must start with http:// or https://")  # not echoed: it may hold a password
    auth = None if token is None else BearerAuth(token if isinstance(token, Token) else Token(token))
    return {"base_url": base_url.rstrip("/"), "auth": auth, "timeout": timeout, **(extra or {})}


def shown_url(url: httpx.URL) -> str:
    """The URL without a user and password it may carry (https://user:password@host)."""
    return str(url.copy_with(username=None, password=None)).rstrip("/")


def from_environment() -> tuple[str, str | None]:
    """(BATON_API_URL, BATON_API_TOKEN) of the environment."""
    url = os.environ.get(URL_VARIABLE, "").strip()
    if not url:
        raise ValueError(f"{URL_VARIABLE} is not set: the URL of a baton OSS, e.g. http://127.0.0.1:8080")
    return url, os.environ.get(TOKEN_VARIABLE) or None


def failure_of(exc: httpx.TransportError) -> Failure:
    """Whether the request left: a connection never made is safe to make again for any call."""
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)):
        return Failure.NOT_SENT
    return Failure.ANSWER_LOST


def transport_error(call: Call[Any], failure: Failure, exc: httpx.TransportError, attempts: int) -> BatonError:
    cause = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if failure is Failure.ANSWER_LOST and not call.safe:
        return OutcomeUnknown(f"{call.describe()}: {failure.value} ({cause}); it may or may not have been "
                              "applied: read the state before acting again")  # fmt: skip
    return Unavailable(f"{call.describe()}: {failure.value} ({cause}), {attempts} attempt(s)")


def log_retry(call: Call[Any], policy: RetryPolicy, attempt: int, failure: Failure, delay: float) -> None:
    log.warning(
        "%s: %s; attempt %d of %d, again in %.2f s", call.describe(), failure.value, attempt, policy.attempts, delay,
        extra={"baton_call": call.describe(), "baton_attempt": attempt, "baton_failure": failure.name,
               "baton_delay": delay},
    )  # fmt: skip


@dataclass(frozen=True)
class Answered(Generic[T]):
    """The call is done: its result."""

    value: T


@dataclass(frozen=True)
class SendAgain:
    """The call is sent again after `delay` seconds, for this failure."""

    failure: Failure
    delay: float


def after_try(call: Call[T], policy: RetryPolicy, attempt: int, spread: float, answer: httpx.Response | None,
              error: httpx.TransportError | None) -> Answered[T] | SendAgain:  # fmt: skip
    """What follows try number `attempt` of `call`, which got `answer` or failed with `error`: its
    result, a retry, or the error the caller sees (raised). Both clients loop on it; `spread` is
    the retry delay's random draw (retries.RetryPolicy.delay)."""
    if error is not None:
        failure = failure_of(error)
        delay = retry_delay(policy, attempt, failure, call.safe, spread)
        if delay is None:
            raise transport_error(call, failure, error, attempt) from error
        return SendAgain(failure, delay)
    assert answer is not None
    if answer.status_code != 503 or 503 in call.ok:
        return Answered(call.result(answer.status_code, answer.content))
    delay = retry_delay(policy, attempt, Failure.UNAVAILABLE, call.safe, spread)
    if delay is None:
        raise error_for_answer(503, answer.content)
    return SendAgain(Failure.UNAVAILABLE, delay)
