"""What an outbox entry's message looks like on the wire: its body as compact JSON."""

from __future__ import annotations

import json

from common.engine.document import OutboxEntry


def encode(entry: OutboxEntry) -> bytes:
    return json.dumps(entry.Body, separators=(",", ":")).encode()
