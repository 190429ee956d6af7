"""The broker port on RabbitMQ quorum queues (BATON_QUEUE_TYPE=quorum), on the shared node.

A queue of the port is one quorum queue per message priority (its band) plus one quorum
dead-letter twin (common.queues). Fail-over between nodes needs a cluster:
tests/chaos/test_quorum_cluster.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pika
import pika.exceptions
import pytest

from common.broker.rabbitmq import RabbitBroker
from common.queues import BANDS, band_of, band_queue, dead_letter_queue, quorum_dead_letter_queue
from common.runtime.inbox import Inbox
from tests.contract.broker_fixtures import Collector, acking, eventually, queue_definitions, unique_queue, vhost_of

pytestmark = pytest.mark.rabbitmq


@pytest.fixture
def quorum(rabbitmq_url: str) -> Iterator[RabbitBroker]:
    broker = RabbitBroker(rabbitmq_url, queue_type="quorum", delivery_limit=2)
    yield broker
    broker.close()


@pytest.fixture
def queue(quorum: RabbitBroker) -> str:
    name = unique_queue("quorum")
    quorum.declare(name)
    return name


def as_dict(arguments) -> dict:
    """rabbitmqctl's JSON gives queue arguments as [name, type, value] triples."""
    return {pair[0]: pair[-1] for pair in arguments} if isinstance(arguments, list) else arguments


def test_bands_and_twin_are_quorum_queues_dead_lettering_at_least_once(
    quorum: RabbitBroker, queue: str, rabbitmq_url: str
) -> None:
    found = queue_definitions(vhost_of(rabbitmq_url))
    twin = quorum_dead_letter_queue(queue)
    assert as_dict(found[twin]["arguments"]) == {"x-queue-type": "quorum"}
    for band in BANDS:
        arguments = as_dict(found[band_queue(queue, band)]["arguments"])
        assert found[band_queue(queue, band)]["durable"] is True
        assert arguments == {
            "x-queue-type": "quorum",
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": twin,
            "x-dead-letter-strategy": "at-least-once",
            "x-overflow": "reject-publish",
            "x-delivery-limit": 2,
        }
    assert queue not in found  # no classic queue of that name: the two types live side by side
    quorum.declare(queue)  # idempotent


def test_a_message_goes_to_the_band_of_its_priority(quorum: RabbitBroker, queue: str) -> None:
    for priority in range(10):
        quorum.publish(queue, str(priority).encode(), priority=priority)
    for band in BANDS:
        eventually(lambda band=band: quorum._publisher.queue_depth(band_queue(queue, band)) == 1,
                   what=f"{band.name} holds its message")
    assert quorum.queue_depth(queue) == 10


def test_priority_order_across_bands(quorum: RabbitBroker, queue: str) -> None:
    """The bands arrive side by side; the consumer's inbox hands out the highest first, then in
    the order of publishing."""
    published = [(0, b"0a"), (9, b"9a"), (2, b"2a"), (5, b"5a"), (0, b"0b"), (9, b"9b"), (5, b"5b")]
    for priority, body in published:
        quorum.publish(queue, body, priority=priority)
    inbox = Inbox()
    received = Collector(settle=lambda delivery: inbox.put(delivery, lambda _d: None))
    quorum.subscribe(queue, received, prefetch=10)
    received.wait_for(len(published))
    order = []
    while (item := inbox.take_nowait()) is not None:
        order.append(item[0].body)
        item[0].ack()
    assert order == [b"9a", b"9b", b"5a", b"5b", b"2a", b"0a", b"0b"]
    assert [band_of(p).name for p in (9, 5, 4, 0)] == ["flight.4", "flight", "start.4", "start"]


def test_the_head_of_every_band_is_delivered_whatever_waits_in_the_others(quorum: RabbitBroker, queue: str) -> None:
    """A backlog of priority 0 does not hold back what was published behind it at a higher
    priority: each band has its own consumer and credit, so with a prefetch of 1 the consumer
    holds the head of each band at once (as a classic priority queue hands out its highest first)."""
    for n in range(30):
        quorum.publish(queue, f"0-{n}".encode(), priority=0)
    quorum.publish(queue, b"urgent start", priority=4)
    quorum.publish(queue, b"urgent flight", priority=9)
    received = Collector()  # never settles: each band's credit stays spent
    quorum.subscribe(queue, received, prefetch=1)
    received.wait_for(3)
    received.stays_at(3)
    assert sorted(received.bodies) == [b"0-0", b"urgent flight", b"urgent start"]


def test_the_queues_of_the_two_band_layout_are_consumed_as_bands(rabbitmq_url: str) -> None:
    """An existing deployment declared `<queue>.q.flight` (then priorities 5..9) and
    `<queue>.q.start` (0..4), and older replicas may still publish there during a rolling
    upgrade. Those queues are the priority-5 and priority-0 bands of this layout, with the same
    arguments: a subscriber starts on them, declaring only what is missing, and consumes what
    they hold."""
    name = unique_queue("upgrade")
    twin = quorum_dead_letter_queue(name)
    connection = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.queue_declare(twin, durable=True, arguments={"x-queue-type": "quorum"})
        earlier = {"x-queue-type": "quorum", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": twin,
                   "x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish", "x-delivery-limit": 2}
        for band, priority in (("flight", 7), ("start", 3)):
            channel.queue_declare(f"{name}.q.{band}", durable=True, arguments=earlier)
            channel.basic_publish("", f"{name}.q.{band}", f"old {band}".encode(),
                                  pika.BasicProperties(priority=priority, delivery_mode=2))
    finally:
        connection.close()
    broker = RabbitBroker(rabbitmq_url, queue_type="quorum", delivery_limit=2)
    try:
        received = Collector(settle=lambda delivery: delivery.ack())
        broker.subscribe(name, received, prefetch=5)
        assert sorted((d.body, d.priority) for d in received.wait_for(2)) == [(b"old flight", 7), (b"old start", 3)]
        broker.publish(name, b"new", priority=3)  # to its own band now
        received.wait_for(3)
        assert broker.queue_depth(name) == 0
    finally:
        broker.close()


def test_dead_letter_moves_the_message_to_the_quorum_twin(quorum: RabbitBroker, queue: str) -> None:
    quorum.publish(queue, b"poison", priority=7, message_id="m-1")
    quorum.publish(queue, b"bad start", priority=1)
    received = Collector(settle=lambda delivery: delivery.dead_letter())
    subscription = quorum.subscribe(queue, received, prefetch=1)
    received.wait_for(2)
    subscription.stop()
    twin = dead_letter_queue(queue)  # the port's name; the adapter maps it to `<queue>.q.dead`
    eventually(lambda: quorum.queue_depth(twin) == 2, what="both dead letters in the twin")
    assert quorum.queue_depth(queue) == 0
    dead = acking()
    quorum.subscribe(twin, dead, prefetch=5)
    assert sorted(d.body for d in dead.wait_for(2)) == [b"bad start", b"poison"]


def test_delivery_limit_dead_letters_a_message_given_back_too_often(quorum: RabbitBroker, queue: str) -> None:
    """delivery_limit=2: the message is handed out three times (counts 0, 1, 2), then set aside."""
    quorum.publish(queue, b"keeps failing", priority=6)
    counts: list[int] = []

    def give_back(delivery) -> None:
        counts.append(delivery.delivery_count)
        delivery.requeue()

    subscription = quorum.subscribe(queue, Collector(settle=give_back), prefetch=1)
    eventually(lambda: quorum.queue_depth(dead_letter_queue(queue)) == 1, what="the poison message dead-lettered")
    subscription.stop()
    assert counts == [0, 1, 2]
    assert quorum.queue_depth(queue) == 0


def test_classic_and_quorum_queues_of_one_name_live_side_by_side(rabbitmq_url: str) -> None:
    name = unique_queue("both")
    classic = RabbitBroker(rabbitmq_url)
    quorum = RabbitBroker(rabbitmq_url, queue_type="quorum")
    try:
        classic.declare(name)
        quorum.declare(name)
        classic.publish(name, b"old", priority=3)
        quorum.publish(name, b"new", priority=3)
        assert classic.queue_depth(name) == 1
        eventually(lambda: quorum.queue_depth(name) == 1, what="the quorum band holds its message")
    finally:
        classic.close()
        quorum.close()


def test_a_band_queue_deleted_under_its_consumer_is_declared_again_and_consumed(
    quorum: RabbitBroker, queue: str, rabbitmq_url: str
) -> None:
    received = Collector(settle=lambda delivery: delivery.ack())
    quorum.subscribe(queue, received, prefetch=5)
    band = band_queue(queue, band_of(3))
    connection = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    try:
        connection.channel().queue_delete(band)  # the broker cancels that band's consumer

        def declared_again() -> bool:
            channel = connection.channel()
            try:
                channel.queue_declare(band, passive=True)
            except pika.exceptions.ChannelClosedByBroker:
                return False
            channel.close()
            return True

        eventually(declared_again, 30, "the band declared again by its subscriber")
    finally:
        connection.close()
    quorum.publish(queue, b"after", priority=3)
    quorum.publish(queue, b"other band", priority=8)
    received.wait_for(2, timeout=30)
    assert sorted(received.bodies) == [b"after", b"other band"]
