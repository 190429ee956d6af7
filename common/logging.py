"""structlog set-up: JSON lines in production, readable lines in a terminal, secrets masked.

Step context (task id, task type, step, phase, attempt, module) is bound with
`structlog.contextvars.bound_contextvars` by the runtime, so every line of a step carries it.
"""

from __future__ import annotations

import logging
import re
import sys
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


def _mask_processor(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    return mask_secrets(event)


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
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
