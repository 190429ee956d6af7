"""How a structlog line is rendered and written: JSON with fixed options, and one write of the
whole line to whatever sys.stderr is at the time, under one lock every writer of the process
shares (structlog's own lines and the standard library's records alike).

structlog's JSONRenderer and PrintLogger do the same with more work per line: json.dumps with a
`default` builds a new encoder each call, and print() makes two writes (the text, then its
newline) and a flush, which the line-atomic stream must hold and join again. A step writes a
line or two at every transition, so these run for every step of every task.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from contextvars import ContextVar, copy_context
from typing import Any

from structlog.contextvars import STRUCTLOG_KEY_PREFIX
from structlog.processors import _json_fallback_handler  # the same fallback as JSONRenderer's
from structlog.processors import format_exc_info as _format_exc_info


_FIELD_OF: dict[ContextVar[Any], str | None] = {}  # a context variable -> its field (None: not structlog's)
_FIELD_OF_MAX = 4096  # variables made on the fly (a library's, per request) are looked at each time past it
_UNSEEN = object()
_PREFIX_LENGTH = len(STRUCTLOG_KEY_PREFIX)


def merge_contextvars(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    """structlog.contextvars.merge_contextvars, the same fields in the same order, each variable's
    field name worked out once instead of at every line (a prefix test and a slice per variable
    of the context, structlog's or not)."""
    fields = _FIELD_OF
    for var, value in copy_context().items():
        field = fields.get(var, _UNSEEN)
        if field is _UNSEEN:
            name = var.name
            field = name[_PREFIX_LENGTH:] if name.startswith(STRUCTLOG_KEY_PREFIX) else None
            if len(fields) < _FIELD_OF_MAX:
                fields[var] = field
        if field is not None and value is not Ellipsis:
            event.setdefault(field, value)  # type: ignore[arg-type]
    return event


_ns = time.time_ns
# The current second's text ("2026-01-31T12:00:05"), made once a second, not at every line: one
# tuple, read and replaced in one step (a thread never sees one second's number with another's text).
_second: tuple[int, str] = (-1, "")


def add_timestamp(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    """structlog's TimeStamper(fmt="iso", utc=True), the same text: datetime.now(UTC).isoformat()
    with "Z" (microseconds, left out when they are 0, as isoformat does), from the same clock
    truncated to microseconds as datetime.now does it; the date and time of the second made once
    a second."""
    global _second
    seconds, micros = divmod(_ns() // 1000, 1_000_000)
    second = _second
    if second[0] != seconds:
        second = _second = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)))
    event["timestamp"] = f"{second[1]}.{micros:06d}Z" if micros else second[1] + "Z"
    return event


def format_exc_info(logger: Any, name: str, event: dict[str, Any]) -> dict[str, Any]:
    """structlog's format_exc_info, called only for a line that has an exception to format."""
    return _format_exc_info(logger, name, event) if "exc_info" in event else event


class JsonLine:
    """structlog's JSONRenderer() output, byte for byte: json.dumps' defaults (ASCII, ", " and
    ": "), objects it cannot encode through `__structlog__` or repr().

    The C encoder json.dumps would make for each line, made once: json.dumps builds one per
    call (a third of a line's encoding). Made without the check for circular values, whose state
    (the values being encoded) would be shared by every thread writing a line: a value that holds
    itself raises RecursionError where json.dumps raises ValueError, and neither writes a line."""

    __slots__ = ("_encode",)

    def __init__(self) -> None:
        self._encode = _c_make_encoder(None, _json_fallback_handler, json.encoder.encode_basestring_ascii, None, ": ",
                                       ", ", False, False, True) if _c_make_encoder else None  # fmt: skip

    def __call__(self, _logger: Any, _name: str, event: dict[str, Any]) -> str:
        if self._encode is None:  # an interpreter without json's C accelerator
            return json.dumps(event, default=_json_fallback_handler)
        return "".join(self._encode(event, 0))


_c_make_encoder = json.encoder.c_make_encoder


class CurrentStderr:
    """Writes to whatever sys.stderr is at the time of the write, not at configuration time:
    a logger cached earlier must not hold on to a stream someone has since replaced or closed.

    Line-atomic: a writer that hands its line in pieces (the standard library's handler writes
    the record, logging.StreamHandler's terminator with it, then flushes) could otherwise share a
    line with another thread's. Each thread's text is held until its newline, and whole lines go
    out in one write under one lock shared by every writer of the process (LineLogger too)."""

    lock = threading.Lock()
    _pending = threading.local()

    def write(self, text: str) -> int:
        held = getattr(self._pending, "text", "") + text
        cut = held.rfind("\n") + 1
        self._pending.text = held[cut:]
        if cut:
            with self.lock:
                sys.stderr.write(held[:cut])
        return len(text)

    def flush(self) -> None:
        held, self._pending.text = getattr(self._pending, "text", ""), ""
        with self.lock:
            if held:
                sys.stderr.write(held)
            sys.stderr.flush()


class LineLogger:
    """structlog's wrapped logger: each rendered line and its newline in one write to the current
    sys.stderr, flushed, under CurrentStderr's lock (a line never shares a line with another)."""

    __slots__ = ()

    def msg(self, message: str) -> None:
        line = message + "\n"
        with CurrentStderr.lock:
            stderr = sys.stderr
            stderr.write(line)
            stderr.flush()

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg


def line_logger_factory(*_args: Any) -> LineLogger:
    """structlog's logger_factory: one logger serves every name (it holds nothing)."""
    return _LINE_LOGGER


_LINE_LOGGER = LineLogger()
