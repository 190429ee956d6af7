"""The logger of the lines every step writes: structlog's, assembled once per configuration, and
under the set-up of common.logging a shorter way to the same line.

structlog's lazy logger assembles a bound logger at each call (a debug line that is then dropped
too), so that a reconfiguration is followed (configure_logging leaves its cache off for that).
HotPathLogger assembles it once per configuration: again whenever the configured processors,
wrapper, factory or context class are other objects than those it was made with
(configure_logging, structlog.configure, a test's capture_logs).

While the configuration is the one configure_logging made, a line skips the bound logger's own
layers (its method, the interpolation, the proxy, the event's assembly from an empty bound context
into a second dict): the keywords become the event, `event` last, the same processors run in the
same order on it, and the rendered text goes to the same logger. The line is the same, byte for
byte. Any other configuration (a test's capture, another set-up) gets structlog's bound logger.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any

# What configure_logging last configured: (its processors, its wrapper class, its level). A
# configuration whose processors and wrapper are these objects takes the short way.
_ours: tuple[Any, Any, int] | None = None

# The methods that take the short way, and their level (any other, `exception` say, is the bound
# logger's own).
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR,
           "critical": logging.CRITICAL}  # fmt: skip


def configured(processors: Any, wrapper_class: Any, level: int) -> None:
    """Called by configure_logging with what it just configured."""
    global _ours
    _ours = (processors, wrapper_class, level)


class HotPathLogger:
    """`structlog.get_logger(name)` for the lines of every step (see the module's text)."""

    __slots__ = ("_name", "_made")

    def __init__(self, name: str):
        self._name = name
        # (the configuration it was assembled under, the bound logger, the short ways by method):
        # one attribute set in one store. Two threads may assemble one at once, and either is
        # right only with its own configuration: kept in several attributes, a thread of an older
        # configuration could store its logger between the newer one's stores and stay, marked as
        # the newer one's.
        self._made: tuple[dict[str, Any], Any, dict[str, Callable[..., Any]]] | None = None

    # The level methods are found on the class: a name found only through __getattr__ costs a
    # failed look-up first (an AttributeError made and dropped), a third of a dropped debug line.
    debug = property(lambda self: self.__getattr__("debug"))
    info = property(lambda self: self.__getattr__("info"))
    warning = property(lambda self: self.__getattr__("warning"))
    error = property(lambda self: self.__getattr__("error"))

    def __getattr__(self, method: str) -> Any:
        structlog = sys.modules.get("structlog") or importlib.import_module("structlog")
        config, made = structlog.get_config(), self._made
        if made is None or not _same(config, made[0]):
            # Assembled after the configuration was read: at worst newer than its mark, and so
            # assembled again at the next line; never kept under a newer configuration's mark.
            bound = structlog.get_logger(self._name).bind()
            made = self._made = (config, bound, _short_ways(config, bound))
        short = made[2].get(method)
        return short if short is not None else getattr(made[1], method)


def _same(config: dict[str, Any], was: dict[str, Any]) -> bool:
    # Compared one by one, without a loop: this runs for every line, a debug one included.
    return config["processors"] is was["processors"] and config["wrapper_class"] is was["wrapper_class"] \
        and config["logger_factory"] is was["logger_factory"] and config["context_class"] is was["context_class"]


def _short_ways(config: dict[str, Any], bound: Any) -> dict[str, Callable[..., Any]]:
    """The methods that take the short way under this configuration: none unless it is
    configure_logging's own and the bound logger holds no context of its own."""
    ours = _ours
    if ours is None or config["processors"] is not ours[0] or config["wrapper_class"] is not ours[1] \
            or bound._context or config["context_class"] is not dict:
        return {}
    # The configured list itself, as the bound logger holds it: structlog's capture_logs swaps its
    # contents in place, and the lines written meanwhile go to the capture.
    processors, logger = bound._processors, bound._logger
    return {method: _line(processors, logger, method) if level >= ours[2] else _dropped
            for method, level in _LEVELS.items()}


def _dropped(event: str, *args: Any, **kw: Any) -> None:
    """A line below the configured level: nothing, as the filtering bound logger's method."""
    return None


def _line(processors: list[Any], logger: Any, method: str) -> Callable[..., Any]:
    from structlog import DropEvent

    write = getattr(logger, method)

    def line(event: str, *args: Any, **kw: Any) -> Any:
        if args:  # structlog's interpolation: one non-empty mapping by its keys, else positionally
            mapping = len(args) == 1 and isinstance(args[0], Mapping) and args[0]
            event = event % (args[0] if mapping else args)
        # The keywords are a dict of this call's own: the event, as structlog's copy of its empty
        # context updated with them would be, key for key.
        if event is not None:
            kw["event"] = event
        rendered: Any = kw
        try:
            for processor in processors:
                rendered = processor(logger, method, rendered)
        except DropEvent:
            return None
        if type(rendered) is str:
            return write(rendered)
        return _as_structlog_passes(write, rendered)

    return line


def _as_structlog_passes(write: Callable[..., Any], rendered: Any) -> Any:
    """A last processor's value other than text, passed on as structlog's bound logger does."""
    if isinstance(rendered, str | bytes | bytearray):
        return write(rendered)
    if isinstance(rendered, tuple):
        return write(*rendered[0], **rendered[1])
    if isinstance(rendered, dict):
        return write(**rendered)
    raise ValueError("Last processor didn't return an appropriate value.  "
                     "Valid return values are a dict, a tuple of (args, kwargs), bytes, or a str.")  # fmt: skip

