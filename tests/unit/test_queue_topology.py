"""Quorum queue topology, node lists and the inbox's order: the pure parts."""

from __future__ import annotations

import pytest

from common.broker.rabbitmq.connection import ConnectionSettings, masked_url, split_urls
from common.broker.rabbitmq.topology import Topology
from common.engine.core.units import IN_FLIGHT_BAND, MAX_TASK_PRIORITY
from common.errors import ConfigError
from common.queues import (
    BANDS,
    band_of,
    band_queues,
    check_queue_type,
    physical_queue,
    physical_queues,
    quorum_dead_letter_queue,
)
from common.runtime.inbox import Inbox

URLS = "amqp://u:s3cret@n1:5672/v, amqp://u:s3cret@n2:5672/v,amqp://n3:5672/v"


def test_a_band_per_message_priority_highest_first_named_by_phase_and_task_priority() -> None:
    assert [band.priority for band in BANDS] == list(range(9, -1, -1))
    assert all(band_of(band.priority) is band for band in BANDS)
    # A task of priority t: its first step at t, its runs in flight at IN_FLIGHT_BAND + t.
    for task_priority in range(MAX_TASK_PRIORITY + 1):
        suffix = f".{task_priority}" if task_priority else ""
        assert band_of(task_priority).name == "start" + suffix
        assert band_of(IN_FLIGHT_BAND + task_priority).name == "flight" + suffix
    with pytest.raises(ValueError):
        band_of(10)


def test_quorum_names_never_clash_with_classic_ones() -> None:
    assert band_queues("mysql") == [
        "mysql.q.flight.4", "mysql.q.flight.3", "mysql.q.flight.2", "mysql.q.flight.1", "mysql.q.flight",
        "mysql.q.start.4", "mysql.q.start.3", "mysql.q.start.2", "mysql.q.start.1", "mysql.q.start",
    ]
    assert quorum_dead_letter_queue("mysql") == "mysql.q.dead"
    assert physical_queues("mysql", "classic") == ["mysql"]
    assert physical_queues("mysql.dead", "quorum") == ["mysql.q.dead"]
    assert physical_queue("mysql", "quorum", 7) == "mysql.q.flight.2"
    assert physical_queue("mysql", "quorum", 5) == "mysql.q.flight"
    assert physical_queue("mysql", "quorum", 4) == "mysql.q.start.4"
    assert physical_queue("mysql", "quorum", 0) == "mysql.q.start"
    assert physical_queue("mysql", "classic", 7) == "mysql"
    with pytest.raises(ValueError, match="quorum"):
        check_queue_type("stream")


def test_quorum_declarations_twin_first_then_bands_with_at_least_once() -> None:
    declared = Topology("quorum", 5).declarations("mysql")
    assert [name for name, _ in declared] == ["mysql.q.dead", *band_queues("mysql")]
    assert all(arguments == declared[1][1] for _, arguments in declared[1:])
    arguments = declared[1][1]
    assert arguments["x-dead-letter-strategy"] == "at-least-once" and arguments["x-overflow"] == "reject-publish"
    assert arguments["x-delivery-limit"] == 5 and arguments["x-dead-letter-routing-key"] == "mysql.q.dead"
    assert Topology("quorum").declarations("mysql.dead") == [("mysql.q.dead", {"x-queue-type": "quorum"})]
    assert Topology().declarations("mysql")[0] == ("mysql.dead", None)  # classic as before


def test_node_list_is_split_masked_and_rotated() -> None:
    assert split_urls(URLS) == ("amqp://u:s3cret@n1:5672/v", "amqp://u:s3cret@n2:5672/v", "amqp://n3:5672/v")
    assert "s3cret" not in masked_url(URLS) and masked_url(URLS).count("u:***@") == 2
    settings = ConnectionSettings(URLS, 3, 1.0)
    firsts = {settings.node_order()[0] for _ in range(3)}
    assert len(firsts) == 3  # each new connection starts at the next node
    assert sorted(settings.node_order()) == sorted(split_urls(URLS))


def test_a_bad_node_in_the_list_is_named_without_its_password() -> None:
    with pytest.raises(ConfigError) as raised:
        split_urls("amqp://u:p@n1/v,http://u:s3cret@n2/v")
    assert "node 2" in str(raised.value) and "s3cret" not in str(raised.value)
    with pytest.raises(ConfigError):
        split_urls(" , ")


class _Delivery:
    def __init__(self, body: bytes, priority: int):
        self.body, self.priority, self.redelivered = body, priority, False

    def ack(self) -> None: ...
    def dead_letter(self) -> None: ...
    def requeue(self) -> None: ...


def test_inbox_hands_out_the_highest_priority_first_then_in_arrival_order() -> None:
    inbox = Inbox()
    for body, priority in [(b"0a", 0), (b"9a", 9), (b"5a", 5), (b"0b", 0), (b"9b", 9)]:
        inbox.put(_Delivery(body, priority), lambda _d: None)
    assert len(inbox) == 5
    order = []
    while (item := inbox.take_nowait()) is not None:
        order.append(item[0].body)
    assert order == [b"9a", b"9b", b"5a", b"0a", b"0b"]
    inbox.put(_Delivery(b"x", 3), lambda _d: None)
    assert [d.body for d in inbox.take_waiting_since(float("inf"))] == [b"x"] and len(inbox) == 0
