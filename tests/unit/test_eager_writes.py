"""pika's plaintext transport, patched by common.broker.rabbitmq.eager_writes, on a real socket
pair: a write goes out at once when nothing waits before it, what the socket does not take waits
for writability, in order, and a message's frames leave as one write."""

from __future__ import annotations

import socket

import pika.connection
import pytest
from pika.adapters.utils.io_services_utils import _AsyncPlaintextTransport

from common.broker.rabbitmq import eager_writes


class Watches:
    """The poller side the transport asks to watch its socket: what it asked, and when."""

    def __init__(self) -> None:
        self.writer: object | None = None
        self.asked_for_writer = 0

    def set_reader(self, fd: int, on_readable: object) -> None:
        pass

    def set_writer(self, fd: int, on_writable: object) -> None:
        self.writer = on_writable
        self.asked_for_writer += 1

    def remove_writer(self, fd: int) -> bool:
        self.writer = None
        return True


@pytest.fixture
def pair():
    assert eager_writes.install()
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    watches = Watches()
    transport = _AsyncPlaintextTransport(ours, protocol=object(), nbio=watches)
    yield transport, theirs, watches
    ours.close()
    theirs.close()


def _read_all(sock: socket.socket, size: int) -> bytes:
    got = bytearray()
    while len(got) < size:
        got += sock.recv(size - len(got))
    return bytes(got)


def test_a_write_with_nothing_buffered_is_sent_at_once(pair) -> None:
    transport, theirs, watches = pair
    transport.write(b"frame")
    assert _read_all(theirs, 5) == b"frame"
    assert watches.asked_for_writer == 0 and transport.get_write_buffer_size() == 0


def test_what_the_socket_does_not_take_waits_for_writability_and_keeps_its_order(pair) -> None:
    transport, theirs, watches = pair
    big = bytes(range(256)) * 40_000  # 10 MB: more than a socket pair's buffers hold
    transport.write(big)
    waiting = transport.get_write_buffer_size()
    assert 0 < waiting < len(big), "the socket takes a part, the rest is buffered"
    assert watches.asked_for_writer == 1
    transport.write(b"after")  # behind the buffered rest: not sent before it
    assert transport.get_write_buffer_size() == waiting + 5
    received = bytearray()
    while watches.writer is not None:
        received += theirs.recv(1 << 20)
        watches.writer()  # the poller: the socket is writable again
    received += _read_all(theirs, len(big) + 5 - len(received))
    assert bytes(received) == big + b"after"
    assert transport.get_write_buffer_size() == 0


def test_a_write_to_a_closed_peer_is_left_to_pika_which_fails_the_connection(pair) -> None:
    transport, theirs, watches = pair
    theirs.close()
    aborted = []
    transport._initiate_abort = aborted.append  # what pika does on a failed send
    transport.write(b"x" * 100_000)
    while watches.writer is not None and not aborted:
        watches.writer()
    assert aborted and isinstance(aborted[0], OSError)


def test_the_frames_of_one_message_are_one_write() -> None:
    assert eager_writes.install()

    class Emits:
        bytes_sent = frames_sent = 0

        def __init__(self) -> None:
            self.writes: list[bytes] = []

        def _adapter_emit_data(self, data: bytes) -> None:
            self.writes.append(data)

    connection = Emits()
    pika.connection.Connection._output_marshaled_frames(connection, [b"method", b"header", b"body"])
    pika.connection.Connection._output_marshaled_frames(connection, [b"ack"])
    assert connection.writes == [b"methodheaderbody", b"ack"]
    assert (connection.frames_sent, connection.bytes_sent) == (4, 19)
