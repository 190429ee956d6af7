"""structlog set-up: JSON lines in production, readable lines in a terminal, secrets masked.

Step context (task id, task type, step, phase, attempt, module) is bound with
`structlog.contextvars.bound_contextvars` by the runtime, so every line of a step carries it.

structlog is imported by the set-up, not by this module: the masking helpers here are used by
code that never logs (`baton get` shows a task), and structlog's import (asyncio with it) is a
large share of such a command's run.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from common.scrubbing import MASK, Scrubber

SECRET_KEY = re.compile(r"pass(word)?|secret|token|credential|api_?key", re.IGNORECASE)
# Masking runs on untrusted text (parameters, error messages) in every log line: it must be linear
# in its input. A regex for "scheme://user:password@" restarts at every letter of a long run and
# rescans it (quadratic); mask_url_passwords finds each "://" once and scans every character a
# bounded number of times. These patterns are single character classes: no nesting, no backtracking.
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_USER_END = re.compile(r"[:/@\s]")
_PASSWORD_END = re.compile(r"[@\s]")


def mask_secrets(value: Any) -> Any:
    """A copy of `value` with secret-looking keys and URL passwords masked, at any depth."""
    if isinstance(value, dict):
        return {
            k: MASK if isinstance(k, str) and SECRET_KEY.search(k) else mask_secrets(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):  # a plain string without a URL stays as it is, without a call
        return [v if type(v) is str and "://" not in v else mask_secrets(v) for v in value]
    if isinstance(value, str):
        return mask_url_passwords(value)
    return value


def mask_url_passwords(text: str) -> str:
    """Every "scheme://user:password@" in `text` with the password replaced by MASK.

    Same result as re.sub(r"([a-z][a-z0-9+.-]*://[^:/@\\s]+:)[^@\\s]+@", r"\\1***@", text, flags=re.I)
    (the tests check it), in linear time: each "://" is found once by str.find; the backward look
    for the scheme stops at the previous match or "://"; the user scan stops at the next ":" or
    "/", so those scans never overlap; and the password's end ("@" or whitespace) is searched once
    and reused for every candidate before it.
    """
    if "://" not in text:
        return text
    parts: list[str] = []
    done = 0  # text[:done] is decided (copied to parts)
    stop = -1  # index of the first "@" or whitespace at or after `after_colon`, cached; len: none
    i = text.find("://")
    while i != -1:
        if _has_scheme(text, done, i):
            user_start = i + 3
            user_end = _search(_USER_END, text, user_start)
            if user_end > user_start and user_end < len(text) and text[user_end] == ":":
                after_colon = user_end + 1
                if stop < after_colon:
                    stop = _search(_PASSWORD_END, text, after_colon)
                if stop > after_colon and stop < len(text) and text[stop] == "@":
                    parts += [text[done:after_colon], MASK, "@"]
                    done = stop + 1
                    i = text.find("://", done)
                    continue
        i = text.find("://", i + 1)
    parts.append(text[done:])
    return "".join(parts)


def redacted_url(url: str) -> str:
    """A URL as an error message may quote it: what stands between its scheme and its last "@"
    (user and password) and what follows a "?" or "#" after that (a token in the query) shown
    as MASK. A refused URL is no better formed than any other, so this parses nothing: a
    password holding "?", "/" or "@" is masked whole all the same."""
    text = url
    at = text.rfind("@")
    if at != -1:
        scheme = text.find("://")
        start = scheme + 3 if 0 <= scheme < at else (text.find(":") + 1 if 0 <= text.find(":") < at else 0)
        text = text[:start] + MASK + text[at:]
    rest = text.rfind("@") + 1
    cut = min((i for i in (text.find("?", rest), text.find("#", rest)) if i != -1), default=-1)
    return text if cut == -1 else text[: cut + 1] + MASK


def _has_scheme(text: str, start: int, i: int) -> bool:
    """Is text[start:i] ending in a URL scheme: scheme characters back to a letter?"""
    j = i - 1
    while j >= start and text[j] in _SCHEME_CHARS:
        if text[j].isalpha():
            return True
        j -= 1
    return False


def _search(pattern: re.Pattern[str], text: str, pos: int) -> int:
    found = pattern.search(text, pos)
    return found.start() if found else len(text)


def exception_summary(exc: BaseException) -> str:
    """Where an exception was raised, frame by frame, and its type: never its message, which may
    quote the input (a pydantic error quotes the value it refused, secrets included)."""
    frames = traceback.extract_tb(exc.__traceback__)[-8:]
    return " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}" for f in reversed(frames))


# Values to mask in every log line of the current context (thread or asyncio task): the secret
# parameter values of the task being worked on, which a failure message may quote verbatim. Built
# once per block: a log line costs one pass over its text, whatever the number of values.
_HIDDEN: ContextVar[Scrubber | None] = ContextVar("baton_hidden_values", default=None)


@contextmanager
def hidden_values(values: Iterable[str]) -> Iterator[None]:
    """Mask these values wherever they appear in a log line written inside the block.

    Typically `with hidden_values(common.masking.secret_values(task)):` around the work on a task.
    """
    token = _HIDDEN.set(Scrubber(values))
    try:
        yield
    finally:
        _HIDDEN.reset(token)


def scrub_values(value: Any, hidden: Iterable[str] | Scrubber) -> Any:
    """A copy of `value` with every occurrence of the `hidden` strings in its strings masked."""
    scrubber = hidden if isinstance(hidden, Scrubber) else Scrubber(hidden)
    return scrubber.value(value)


def _mask_processor(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    hidden = _HIDDEN.get()
    return mask_secrets(hidden.value(event) if hidden else event)  # type: ignore[no-any-return]


def _masked_text(text: str) -> str:
    hidden = _HIDDEN.get()
    return mask_url_passwords(hidden.text(text) if hidden else text)


_PLAIN_RECORDS = logging.getLogRecordFactory()


def _masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
    """Records of the standard library's logging (uvicorn, pika, pymongo) get the same masking as
    structlog's lines: URL passwords, and the secrets of the task being worked on."""
    record = _PLAIN_RECORDS(*args, **kwargs)
    try:
        text = record.getMessage()
    except Exception:  # a malformed call: leave it to logging's own error report
        return record
    masked = _masked_text(text)
    if masked != text:
        record.msg, record.args = masked, ()
    return record


_HANDLER_NAME = "baton"
# Libraries that narrate every connection, channel or request at info: their warnings and errors
# are worth a line, the rest only when debugging (httpx's request lines would also print the
# full URL of every webhook call).
_CHATTY = ("pika", "httpx", "httpcore")


def _route_standard_library(before_render: list[Any], renderer: Any, level: str, libraries: str | None) -> None:
    """Lines of the standard library's loggers (uvicorn, pika, pymongo) come out as structlog's
    do: one JSON object a line in production, with level, timestamp, the logger's name and the
    step's context, masked the same way; not a second, plain-text format in the same stream.

    One handler of ours on the root logger, replaced on reconfiguration; handlers others added
    (pytest's log capture) stay."""
    import structlog

    handler = logging.StreamHandler(_CurrentStderr())  # type: ignore[arg-type]
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *before_render],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    _set_root_handler(handler)
    _set_standard_library_levels(level, libraries)


def _set_root_handler(handler: logging.Handler) -> None:
    """Ours replaced in its place (a record being handled goes through the list once, not twice)."""
    handler.set_name(_HANDLER_NAME)
    root = logging.getLogger()
    ours = [i for i, h in enumerate(root.handlers) if h.get_name() == _HANDLER_NAME]
    if not ours:
        root.addHandler(handler)
        return
    root.handlers[ours[0]] = handler
    for old in [root.handlers[i] for i in ours[1:]]:
        root.removeHandler(old)


def _set_standard_library_levels(level: str, libraries: str | None) -> None:
    logging.getLogger().setLevel(logging.getLevelName(level.upper()))
    chatty = libraries or ("debug" if level.lower() == "debug" else "warning")
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.getLevelName(chatty.upper()))
    logging.captureWarnings(True)  # a library's DeprecationWarning too, as a line of the log


class _CurrentStderr:
    """Writes to whatever sys.stderr is at the time of the write, not at configuration time:
    a logger cached earlier must not hold on to a stream someone has since replaced or closed.

    Line-atomic: structlog prints a line and its newline as two writes, the standard library's
    handler writes under a lock of its own, so two threads could put their lines on one line.
    Each thread's text is held until its newline, and whole lines go out in one write under one
    lock shared by every writer of the process."""

    _lock = threading.Lock()
    _pending = threading.local()

    def write(self, text: str) -> int:
        held = getattr(self._pending, "text", "") + text
        cut = held.rfind("\n") + 1
        self._pending.text = held[cut:]
        if cut:
            with self._lock:
                sys.stderr.write(held[:cut])
        return len(text)

    def flush(self) -> None:
        held, self._pending.text = getattr(self._pending, "text", ""), ""
        with self._lock:
            if held:
                sys.stderr.write(held)
            sys.stderr.flush()


def configure_logging(log_format: str = "console", level: str = "info", libraries: str | None = None) -> None:
    """`libraries`: the level of the connection libraries' own lines (pika, httpx), when not
    the default (theirs only when debugging, else warnings)."""
    import structlog

    renderer: Any
    if log_format == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        # Plain tracebacks: a rich one prints every frame's local variables (a task's secret
        # parameters among them) and can run to megabytes for one large document.
        renderer = structlog.dev.ConsoleRenderer(
            colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback
        )
    logging.setLogRecordFactory(_masked_record)
    before_render = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        # Tracebacks become text BEFORE masking, so a secret quoted in one is masked too.
        structlog.processors.format_exc_info,
        _mask_processor,
    ]
    _route_standard_library(before_render, renderer, level, libraries)
    structlog.configure(
        processors=[*before_render, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        # Not cached: a logger first used before a reconfiguration (tests, `baton up` switching
        # formats) must follow the new one. It costs a few microseconds a line.
        cache_logger_on_first_use=False,
    )


def configure_logging_when_used(log_format: str = "console", level: str = "info", libraries: str | None = None) -> None:
    """configure_logging, for a short command that seldom logs (a client command, errors only):
    the same set-up, done when the process first needs it: as soon as any module imports
    structlog (before that module can write a line), or when a standard library logger first
    writes a record that passes the levels. A `baton get` that logs nothing never imports
    structlog, which would otherwise be a large share of its run."""
    if "structlog" in sys.modules:
        configure_logging(log_format, level, libraries)
        return
    configure = lambda: configure_logging(log_format, level, libraries)  # noqa: E731
    logging.setLogRecordFactory(_masked_record)
    _set_standard_library_levels(level, libraries)
    _set_root_handler(_FirstRecordHandler())
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AfterImport)]  # an earlier call's
    sys.meta_path.insert(0, _AfterImport("structlog", configure))  # type: ignore[arg-type]


class _FirstRecordHandler(logging.Handler):
    """Stands in for the root handler until structlog is loaded: the first record loads it (which
    runs the set-up: the real handler replaces this one) and goes to the real handler."""

    def emit(self, record: logging.LogRecord) -> None:
        import structlog  # noqa: F401  (its import runs the deferred set-up)

        for handler in logging.getLogger().handlers:
            if handler.get_name() == _HANDLER_NAME and handler is not self:
                handler.handle(record)


class _AfterImport:
    """A meta path finder that runs `then` right after the module `name` is first loaded, then
    takes itself off the path. The module is found and loaded by the usual finders; a mere look
    for it (importlib.util.find_spec, loading nothing) leaves the finder in place."""

    def __init__(self, name: str, then: Any):
        self._name, self._then = name, then
        self._finding = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self._name or self._finding:
            return None
        import importlib.util

        self._finding = True  # the usual finders' turn: this one answers None meanwhile
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._finding = False
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def load_then(module: Any) -> None:
            load(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            self._then()

        spec.loader.exec_module = load_then  # type: ignore[method-assign]  (this spec's loader only)
        return spec
