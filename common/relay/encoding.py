"""What an outbox entry's message looks like on the wire: its body as compact JSON (a traced
task's step message also names the span that published it: common/tracing/publishing.py)."""

from __future__ import annotations

from collections.abc import Callable

import pydantic_core

from common.engine.codes import OutboxKind
from common.engine.document import OutboxEntry
from common.tracing import state

# common.tracing.publishing.traced_message, imported on the first traced message (it imports
# OpenTelemetry, which a process that never traces does not load), then kept: an import
# statement on every message costs more than the check around it.
_traced_message: Callable[[OutboxEntry], bytes] | None = None


def encode(entry: OutboxEntry) -> bytes:
    global _traced_message
    if state.tracer is not None and entry.Kind is OutboxKind.PUBLISH and "Trace" in entry.Body:
        if _traced_message is None:
            from common.tracing.publishing import traced_message

            _traced_message = traced_message
        return _traced_message(entry)
    # pydantic-core writes the compact JSON json.dumps(separators=(",", ":")) writes (NaN and
    # Infinity included; text other than ASCII as UTF-8, not escaped: the same values for any
    # JSON reader) in a sixth of the time, on every step's publish.
    return pydantic_core.to_json(entry.Body, inf_nan_mode="constants")
