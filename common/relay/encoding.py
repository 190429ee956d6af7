"""What an outbox entry's message looks like on the wire: its body as compact JSON (a traced
task's step message also names the span that published it: common/tracing/publishing.py)."""

from __future__ import annotations

import json

from common.engine.codes import OutboxKind
from common.engine.document import OutboxEntry
from common.tracing import state


def encode(entry: OutboxEntry) -> bytes:
    if state.tracer is not None and entry.Kind is OutboxKind.PUBLISH and "Trace" in entry.Body:
        from common.tracing.publishing import traced_message

        return traced_message(entry)
    return json.dumps(entry.Body, separators=(",", ":")).encode()
