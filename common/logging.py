"""structlog set-up: JSON lines in production, readable lines in a terminal, secrets masked
(what a line hides, and how: common.secrets.log_lines).

Step context (task id, task type, step, phase, attempt, module) is bound with `bound_fields` by
the runtime, so every line of a step carries it.

structlog is imported by the set-up, not by this module: a command that logs nothing (`baton get`
shows a task) need not import it, and structlog's import (asyncio with it) is a large share of
such a command's run.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import traceback
from typing import Any

from common.hot_path_logger import HotPathLogger, configured  # noqa: F401  (HotPathLogger: imported from here)
from common.secrets.log_lines import mask_log_event, masked_log_text
from common.tracing.log_fields import add_trace_ids


class bound_fields:  # noqa: N801  (a context manager, named as the function it replaced)
    """Every line written inside the block carries `fields`; afterwards each key is as it was
    (unset, or its outer value). structlog's `bound_contextvars` does the same but first reads
    the whole context to know what to restore; the tokens of the values set restore it exactly,
    for less, and the runtime binds a step's fields at every transition (a class, not a
    generator-based context manager: about half the cost to enter and leave).

    The variable behind each field is structlog's (its name, its registry: structlog's own
    functions and processors see the field), looked up here by the field's name alone: structlog's
    `bind_contextvars` builds the variable's name and a mapping of tokens for every field bound.

    Each token is reset through its own variable: a block entered before its variable was known
    here holds the token of the variable it set."""

    __slots__ = ("_fields", "_tokens")

    def __init__(self, **fields: Any):
        self._fields = fields

    def __enter__(self) -> None:
        variables = _VARIABLES
        tokens = []
        for field, value in self._fields.items():
            var = variables.get(field)
            tokens.append(var.set(value) if var is not None else _first_bound(field, value))
        self._tokens = tokens

    def __exit__(self, *_exc: object) -> None:
        for token in self._tokens:
            token.var.reset(token)


_VARIABLES: dict[str, Any] = {}  # a field -> structlog's context variable for it, once bound here
_FIRST_BINDS = threading.Lock()


def _first_bound(field: str, value: Any) -> Any:
    """Binds a field through structlog, which makes its variable the first time (this module does
    not import structlog before), and remembers the variable. One thread at a time: two threads
    making a field's variable at once would each make one, and structlog's registry would keep
    only one of them, maybe not the one remembered here."""
    from structlog.contextvars import bind_contextvars

    with _FIRST_BINDS:
        token = bind_contextvars(**{field: value})[field]
        _VARIABLES[field] = token.var
    return token


def exception_summary(exc: BaseException) -> str:
    """Where an exception was raised, frame by frame, and its type: never its message, which may
    quote the input (a pydantic error quotes the value it refused, secrets included)."""
    frames = traceback.extract_tb(exc.__traceback__)[-8:]
    return " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}" for f in reversed(frames))


MAX_ERROR_TEXT = 300  # a library exception's message, in its one line


def library_exception_in_one_line(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    """A library's record with an exception (pika's "connection lost" from its I/O loop) becomes
    one event with the exception's type and message (`error`) and where it was raised (`where`),
    not a traceback of many lines inside the event: the log stays one event a line that a reader
    and a log pipeline can filter on. Masked afterwards like every line."""
    exc_info = event.pop("exc_info", None)
    if exc_info is True:
        exc_info = sys.exc_info()
    exc = exc_info[1] if isinstance(exc_info, tuple) else exc_info
    if isinstance(exc, BaseException):
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        event.setdefault("error", text if len(text) <= MAX_ERROR_TEXT else text[: MAX_ERROR_TEXT - 1] + "…")
        event.setdefault("where", exception_summary(exc))
    return event


_PLAIN_RECORDS = logging.getLogRecordFactory()


def _masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
    """Records of the standard library's logging (uvicorn, pika, pymongo) get the same masking as
    structlog's lines: URL passwords, and the secrets of the task being worked on."""
    record = _PLAIN_RECORDS(*args, **kwargs)
    try:
        text = record.getMessage()
    except Exception:  # a malformed call: leave it to logging's own error report
        return record
    masked = masked_log_text(text)
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

    from common.log_output import CurrentStderr

    handler = logging.StreamHandler(CurrentStderr())  # type: ignore[arg-type]
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, library_exception_in_one_line, *before_render],
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


def configure_logging(log_format: str = "console", level: str = "info", libraries: str | None = None) -> None:
    """`libraries`: the level of the connection libraries' own lines (pika, httpx), when not
    the default (theirs only when debugging, else warnings)."""
    import structlog

    from common.log_output import JsonLine, add_timestamp, format_exc_info, line_logger_factory, merge_contextvars

    renderer: Any
    if log_format == "json":
        renderer = JsonLine()
    else:
        # Plain tracebacks: a rich one prints every frame's local variables (a task's secret
        # parameters among them) and can run to megabytes for one large document.
        renderer = structlog.dev.ConsoleRenderer(
            colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback
        )
    logging.setLogRecordFactory(_masked_record)
    before_render = [
        merge_contextvars,
        add_trace_ids,
        structlog.processors.add_log_level,
        add_timestamp,
        # Tracebacks become text BEFORE masking, so a secret quoted in one is masked too.
        format_exc_info,
        mask_log_event,
    ]
    _route_standard_library(before_render, renderer, level, libraries)
    processors, level_number = [*before_render, renderer], logging.getLevelName(level.upper())
    wrapper_class = structlog.make_filtering_bound_logger(level_number)
    configured(processors, wrapper_class, level_number)  # HotPathLogger's short way
    structlog.configure(
        processors=processors,
        wrapper_class=wrapper_class,
        logger_factory=line_logger_factory,
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
