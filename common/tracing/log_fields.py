"""`trace_id` and `span_id` on every log line written inside a span, so a line leads to its trace
and a trace to its lines. One attribute read per line while tracing is off."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from common.tracing import state

# current_step.hex_ids, imported on the first line written while tracing is on (it imports
# OpenTelemetry, which a process that never traces does not load), then kept: an import
# statement on every line costs more than the rest of this function.
_hex_ids: Callable[[], tuple[str, str] | None] | None = None


def add_trace_ids(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    global _hex_ids
    if state.tracer is None:
        return event
    if _hex_ids is None:
        from common.tracing.current_step import hex_ids

        _hex_ids = hex_ids
    current = _hex_ids()
    if current is not None:
        event["trace_id"], event["span_id"] = current
    return event
