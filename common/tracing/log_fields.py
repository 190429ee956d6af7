"""`trace_id` and `span_id` on every log line written inside a span, so a line leads to its trace
and a trace to its lines. One attribute read per line while tracing is off."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from common.tracing import state

# From current_step, imported on the first line written while tracing is on (it imports
# OpenTelemetry, which a process that never traces does not load), then kept: an import
# statement on every line costs more than the rest of this function.
_hex_ids: Callable[[], tuple[str, str] | None] | None = None
_step: Callable[[], Any] = lambda: None  # noqa: E731 - current_step.CURRENT.get
_otel: Callable[[], Any] = lambda: None  # noqa: E731 - current_step.otel_current


def add_trace_ids(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    if state.tracer is None:
        return event
    if _hex_ids is None:
        _first_line()
    # A step's span (current_step.hex_ids' first case, inline: a call fewer on every line)
    step = _step()
    if step is not None and step[2] is _otel():
        event["trace_id"], event["span_id"] = step[3], step[1].to_bytes(8, "big").hex()
        return event
    current = _hex_ids()  # type: ignore[misc]
    if current is not None:
        event["trace_id"], event["span_id"] = current
    return event


def _first_line() -> None:
    global _hex_ids, _step, _otel
    from common.tracing.current_step import CURRENT, hex_ids, otel_current

    _step, _otel, _hex_ids = CURRENT.get, otel_current, hex_ids
