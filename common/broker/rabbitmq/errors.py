"""pika's exceptions, sorted by what the adapter does about them.

They never leave this package: the publisher and the consumer catch them by these groups and
raise BrokerError / UnroutableMessage (common.errors) instead, or reconnect. And `guarded`, for
the exceptions that are bugs of ours, on the publisher's I/O loop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import pika.exceptions
import structlog

log = structlog.get_logger(__name__)
F = TypeVar("F", bound=Callable[..., Any])

# "This connection or channel is gone": reconnect and try again.
CONNECTION_ERRORS = (pika.exceptions.AMQPError, OSError)

# "The broker said no" (wrong credentials or vhost, queue arguments that differ): configuration
# faults that reconnecting will not mend. Each is also a CONNECTION_ERROR: catch these first.
REFUSALS = (
    pika.exceptions.ChannelClosedByBroker,
    pika.exceptions.AuthenticationError,
    pika.exceptions.ProbableAuthenticationError,
    pika.exceptions.ProbableAccessDeniedError,
)


def guarded(callback: F) -> F:
    """For callbacks on the publisher's I/O loop: a bug of ours must not kill that thread. Log it
    and carry on; the calls it leaves unanswered fail at their deadlines."""

    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except Exception:
            log.exception("broker.publisher_callback_failed", callback=callback.__name__)
            return None

    return run  # type: ignore[return-value]
