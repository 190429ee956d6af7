"""Frames sent when they are written, not on the I/O loop's next turn: fewer system calls and
fewer loop turns per publish and per ack.

pika's plaintext transport buffers every write and asks the poller to watch the socket for
writability (an epoll_ctl), sends on the loop's next turn (an epoll_wait and a send per frame),
then stops watching (another epoll_ctl). A published message is three frames (method, header,
body): three sends. Here a message's frames go out as one write, and a write with nothing queued
before it is sent at once on the non-blocking socket; only what the socket does not take is
buffered, the way pika always did, and sent when the socket is writable again. Order holds: while
anything is buffered, later writes queue behind it.

A failing send leaves the data to pika's own path, which meets the error again on the socket's
next writability and closes the connection as before. TLS connections (amqps) keep pika's
transport unchanged: a partial SSL write must be retried with the same buffer, which only pika's
SSL state machine knows how to do.

Installed once, on import of the adapter (common.broker.rabbitmq); a pika without the parts
patched here keeps its own behaviour (checked at install, logged).
"""

from __future__ import annotations

from collections.abc import Sequence

import pika.connection
import structlog
from pika.adapters.utils import io_services_utils

log = structlog.get_logger(__name__)

_Transport = getattr(io_services_utils, "_AsyncPlaintextTransport", None)
_PATCHED = "_baton_eager_writes"


def install() -> bool:
    """Patch pika once (idempotent); False if this pika lacks what the patch relies on."""
    connection = pika.connection.Connection
    if getattr(connection, _PATCHED, False):
        return True
    # The instance attributes the write uses (_state, _tx_buffers, _sock) are pika's too: the
    # adapter's tests run every broker path through this patch on the pinned pika.
    usable = _Transport is not None and hasattr(_Transport, "_STATE_ACTIVE")
    if not usable or not hasattr(connection, "_output_marshaled_frames"):
        log.warning("broker.eager_writes_unavailable", pika=getattr(pika, "__version__", "?"))
        return False
    original_write = _Transport.write

    def write(self, data: bytes) -> None:
        if self._state != self._STATE_ACTIVE or self._tx_buffers or not data:
            original_write(self, data)  # inactive (ignored), behind buffered data, or empty
            return
        try:
            sent = self._sock.send(data)
        except BlockingIOError:
            sent = 0
        except OSError:
            original_write(self, data)  # the writability handler meets the error and aborts
            return
        if sent < len(data):
            original_write(self, data[sent:])

    def output_marshaled_frames(self, marshaled_frames: Sequence[bytes]) -> None:
        if not marshaled_frames:
            return
        data = marshaled_frames[0] if len(marshaled_frames) == 1 else b"".join(marshaled_frames)
        self.bytes_sent += len(data)
        self.frames_sent += len(marshaled_frames)
        self._adapter_emit_data(data)

    _Transport.write = write
    connection._output_marshaled_frames = output_marshaled_frames
    setattr(connection, _PATCHED, True)
    return True
