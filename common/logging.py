"""structlog set-up: JSON lines in production, readable lines in a terminal, secrets masked.

Step context (task id, task type, step, phase, attempt, module) is bound with
`structlog.contextvars.bound_contextvars` by the runtime, so every line of a step carries it.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import structlog

SECRET_KEY = re.compile(r"pass(word)?|secret|token|credential|api_?key", re.IGNORECASE)
URL_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://[^:/@\s]+:)[^@\s]+@", re.IGNORECASE)
MASK = "***"


def mask_secrets(value: Any) -> Any:
    """A copy of `value` with secret-looking keys and URL passwords masked, at any depth."""
    if isinstance(value, dict):
        return {
            k: MASK if isinstance(k, str) and SECRET_KEY.search(k) else mask_secrets(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [mask_secrets(v) for v in value]
    if isinstance(value, str):
        return URL_PASSWORD.sub(lambda m: m.group("scheme") + MASK + "@", value)
    return value


# Values to mask in every log line of the current context (thread or asyncio task): the secret
# parameter values of the task being worked on, which a failure message may quote verbatim.
_HIDDEN: ContextVar[tuple[str, ...]] = ContextVar("baton_hidden_values", default=())


@contextmanager
def hidden_values(values: Iterable[str]) -> Iterator[None]:
    """Mask these values wherever they appear in a log line written inside the block.

    Typically `with hidden_values(common.masking.secret_values(task)):` around the work on a task.
    """
    token = _HIDDEN.set(tuple(sorted(set(values), key=len, reverse=True)))  # longest first
    try:
        yield
    finally:
        _HIDDEN.reset(token)


def scrub_values(value: Any, hidden: Iterable[str]) -> Any:
    """A copy of `value` with every occurrence of the `hidden` strings in its strings masked."""
    if isinstance(value, dict):
        return {k: scrub_values(v, hidden) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_values(v, hidden) for v in value]
    if isinstance(value, str):
        for secret in hidden:
            value = value.replace(secret, MASK)
    return value


def _mask_processor(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    hidden = _HIDDEN.get()
    return mask_secrets(scrub_values(event, hidden) if hidden else event)  # type: ignore[no-any-return]


class _CurrentStderr:
    """Writes to whatever sys.stderr is at the time of the write, not at configuration time:
    a logger cached earlier must not hold on to a stream someone has since replaced or closed."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(log_format: str = "console", level: str = "info") -> None:
    renderer: Any
    if log_format == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _mask_processor,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        # Not cached: a logger first used before a reconfiguration (tests, `baton up` switching
        # formats) must follow the new one. It costs a few microseconds a line.
        cache_logger_on_first_use=False,
    )
