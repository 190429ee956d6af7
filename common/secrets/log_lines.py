"""What a log line hides: keys named like secrets, URL passwords, and the secret values of the
task being worked on, wherever a line quotes them. common.logging installs `mask_log_event` as
structlog's last processor before rendering and runs the standard library's records through
`masked_log_text`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

from common.secrets.documents import mask_secrets, mask_secrets_in_place
from common.secrets.scrubber import Scrubber
from common.secrets.urls import mask_url_passwords

# Values to mask in every log line of the current context (thread or asyncio task): the secret
# parameter values of the task being worked on, which a failure message may quote verbatim. Built
# once per block: a log line costs one pass over its text, whatever the number of values.
_HIDDEN: ContextVar[Scrubber | None] = ContextVar("baton_hidden_values", default=None)


class hidden_values:  # noqa: N801  (a context manager, named as the function it replaced)
    """Mask these values wherever they appear in a log line written inside the block.

    Typically `with hidden_values(common.secrets.values.secret_values(task)):` around the work
    on a task. A task without secrets (most) builds no scrubber: none masks what an empty one
    would (nothing, whatever an outer block hides), and the step handler enters such a block
    at every transition.
    """

    __slots__ = ("_scrubber", "_token")

    def __init__(self, values: Iterable[str]):
        self._scrubber = None if type(values) is list and not values else Scrubber(values)

    def __enter__(self) -> None:
        self._token = _HIDDEN.set(self._scrubber)

    def __exit__(self, *_exc: object) -> None:
        _HIDDEN.reset(self._token)


def hide_too(value: str) -> None:
    """Mask `value` too in every later log line of the current context (a credential a command
    was just handed: its callback token). The context is the command's own (a thread's or a
    coroutine's copy, a command process's block), so it goes when the command ends."""
    current = _HIDDEN.get()
    _HIDDEN.set(Scrubber([*(current.values if current else ()), value]))


def mask_log_event(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    """structlog's processor: the event with the block's hidden values and secret keys masked.
    A processor's event is its line's own: its keys masked in place (the values that change are
    replaced by masked copies, never changed in place), or in the copy the hidden values made."""
    hidden = _HIDDEN.get()
    if hidden:
        event = hidden.value(event)
    return mask_secrets_in_place(event) if type(event) is dict else mask_secrets(event)


def masked(value: Any) -> Any:
    """`value` (text, or data of any shape) as a log line written here would show it: the
    current context's secret values, secret-looking keys and URL passwords masked (a span's
    attributes get the same: common/tracing/scrub.py). A copy: `value` stays as it is."""
    hidden = _HIDDEN.get()
    return mask_secrets(hidden.value(value) if hidden else value)


def masked_log_text(text: str) -> str:
    """A standard library log record's text, masked as structlog's lines are; and a callback's
    token in a request line (the web server's access log, when debugging) is a credential."""
    hidden = _HIDDEN.get()
    return _CALLBACK_PATH.sub(r"\1***", mask_url_passwords(hidden.text(text) if hidden else text))


_CALLBACK_PATH = re.compile(r"(/api/v1/callbacks/)[^\s/?\"']+")
