"""The spans a command process sent back with its answer, handed to this module's exporters."""

from __future__ import annotations

from typing import Any

from common.tracing import state


def adopt_spans(spans: list[dict[str, Any]] | None) -> None:
    emit = state.emit
    if spans and emit is not None:
        from common.tracing.wire import from_wire

        for data in spans:
            emit(from_wire(data, state.resource))
