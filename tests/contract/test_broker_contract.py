"""The broker port's contract, run against every adapter (in-process and RabbitMQ).

The RabbitMQ runs use this module's own vhost and skip without a broker (they fail under CI=true).
Then come RabbitMQ-only tests that break connections from the broker's side, and the RabbitMQ
adapter's pure decisions.
"""

from __future__ import annotations

import threading
import time

import pytest

from common.broker.factory import open_broker
from common.broker.inprocess import InProcessBroker
from common.broker.port import Broker, Delivery
from common.broker.rabbitmq import RabbitBroker
from common.broker.rabbitmq.connection import masked_url
from common.broker.rabbitmq.policy import reconnect_delay
from common.errors import BrokerError, ConfigError, UnroutableMessage
from common.queues import dead_letter_queue
from tests.contract.broker_fixtures import (  # noqa: F401  (fixtures)
    Collector,
    MakeBroker,
    acking,
    broker,
    close_connections,
    connection_names,
    eventually,
    make_broker,
    queue,
    queue_definitions,
    rabbit,
    unique_queue,
    vhost_of,
)


def test_round_trip(broker: Broker, queue: str) -> None:
    broker.publish(queue, b'{"step": 1}', priority=3, message_id="m-1")
    received = acking()
    subscription = broker.subscribe(queue, received, prefetch=1)
    [delivery] = received.wait_for(1)
    assert delivery.body == b'{"step": 1}'
    assert delivery.redelivered is False
    assert delivery.message_id == "m-1"
    assert delivery.priority == 3
    subscription.stop()
    assert broker.queue_depth(queue) == 0  # the ack stuck: nothing came back on stop


def test_declare_is_idempotent(broker: Broker, queue: str) -> None:
    broker.declare(queue)
    broker.declare(queue)
    assert broker.queue_depth(queue) == 0
    assert broker.queue_depth(dead_letter_queue(queue)) == 0


def test_publish_to_an_undeclared_queue_is_unroutable(broker: Broker, queue: str) -> None:
    with pytest.raises(UnroutableMessage):
        broker.publish(unique_queue("nowhere"), b"{}")
    broker.publish(queue, b"{}")  # the adapter is still fine afterwards
    assert broker.queue_depth(queue) == 1


def test_priority_out_of_range_is_refused(broker: Broker, queue: str) -> None:
    with pytest.raises(ValueError):
        broker.publish(queue, b"{}", priority=10)


def test_higher_priority_first_then_fifo(broker: Broker, queue: str) -> None:
    for priority, body in [(0, b"0a"), (9, b"9a"), (5, b"5a"), (0, b"0b"), (9, b"9b")]:
        broker.publish(queue, body, priority=priority)
    received = acking()
    broker.subscribe(queue, received, prefetch=1)
    received.wait_for(5)
    assert received.bodies == [b"9a", b"9b", b"5a", b"0a", b"0b"]


def test_prefetch_bounds_unsettled_deliveries(broker: Broker, queue: str) -> None:
    for n in range(5):
        broker.publish(queue, str(n).encode())
    held = Collector()
    broker.subscribe(queue, held, prefetch=2)
    first = held.wait_for(2)
    held.stays_at(2)
    threading.Thread(target=first[0].ack).start()  # from another thread than the handler's
    held.wait_for(3)
    held.stays_at(3)
    for delivery in held.deliveries[1:3]:
        delivery.ack()
    held.wait_for(5)
    assert held.bodies == [b"0", b"1", b"2", b"3", b"4"]


def test_ack_from_a_worker_thread(broker: Broker, queue: str) -> None:
    ackers: list[threading.Thread] = []

    def ack_on_a_thread(delivery: Delivery) -> None:
        acker = threading.Thread(target=delivery.ack)
        acker.start()
        ackers.append(acker)  # once started: a thread is joined only after its start

    received = Collector(settle=ack_on_a_thread)
    subscription = broker.subscribe(queue, received, prefetch=4)
    for n in range(10):
        broker.publish(queue, str(n).encode())
    received.wait_for(10)
    # A delivery is counted before its handler starts its acker: wait for all ten ackers.
    eventually(lambda: len(ackers) == 10, what="an acker per delivery")
    for acker in ackers:  # every ack asked for before the stop (a later one finds it closed)
        acker.join(10)
    subscription.stop()
    assert broker.queue_depth(queue) == 0
    assert not any(d.redelivered for d in received.deliveries)


def test_dead_letter_moves_the_message_to_the_twin(broker: Broker, queue: str) -> None:
    twin = dead_letter_queue(queue)
    broker.publish(queue, b"poison", message_id="p-1")
    rejected = Collector(settle=lambda d: d.dead_letter())
    subscription = broker.subscribe(queue, rejected, prefetch=1)
    rejected.wait_for(1)
    eventually(lambda: broker.queue_depth(twin) == 1, what="dead letter in the twin")
    subscription.stop()
    assert broker.queue_depth(queue) == 0
    from_twin = acking()
    broker.subscribe(twin, from_twin, prefetch=1)
    [dead] = from_twin.wait_for(1)
    assert dead.body == b"poison"
    assert dead.message_id == "p-1"


def test_a_handler_that_raises_dead_letters_its_delivery(broker: Broker, queue: str) -> None:
    def explode(delivery: Delivery) -> None:
        raise RuntimeError("handler bug")

    broker.subscribe(queue, explode, prefetch=1)
    broker.publish(queue, b"1")
    broker.publish(queue, b"2")
    # The consumer survived the first one: both end up dead-lettered.
    eventually(lambda: broker.queue_depth(dead_letter_queue(queue)) == 2, what="2 dead letters")


def test_requeue_redelivers(broker: Broker, queue: str) -> None:
    def requeue_first_time(delivery: Delivery) -> None:
        if delivery.redelivered:
            delivery.ack()
        else:
            delivery.requeue()

    received = Collector(settle=requeue_first_time)
    broker.subscribe(queue, received, prefetch=1)
    broker.publish(queue, b"again")
    first, second = received.wait_for(2)
    assert (first.body, first.redelivered) == (b"again", False)
    assert (second.body, second.redelivered) == (b"again", True)
    received.stays_at(2)


def test_stop_returns_unsettled_deliveries(broker: Broker, queue: str) -> None:
    for n in range(3):
        broker.publish(queue, str(n).encode())
    held = Collector()
    subscription = broker.subscribe(queue, held, prefetch=5)
    held.wait_for(3)
    subscription.stop()
    eventually(lambda: broker.queue_depth(queue) == 3, what="3 messages back in the queue")
    held.deliveries[0].ack()  # its connection is gone: a no-op, not an error
    again = acking()
    broker.subscribe(queue, again, prefetch=5)
    again.wait_for(3)
    assert sorted(again.bodies) == [b"0", b"1", b"2"]
    assert all(d.redelivered for d in again.deliveries)


def test_pause_and_resume(broker: Broker, queue: str) -> None:
    received = acking()
    subscription = broker.subscribe(queue, received, prefetch=2)
    broker.publish(queue, b"before")
    received.wait_for(1)
    subscription.pause()
    broker.publish(queue, b"during-1")
    broker.publish(queue, b"during-2")
    received.stays_at(1)
    assert broker.queue_depth(queue) == 2
    subscription.resume()
    received.wait_for(3)
    assert received.bodies == [b"before", b"during-1", b"during-2"]


def test_concurrent_publishers_deliver_each_message_once(broker: Broker, queue: str) -> None:
    threads, per_thread = 8, 200
    received = acking()
    broker.subscribe(queue, received, prefetch=100)

    def publish_batch(t: int) -> None:
        for n in range(per_thread):
            broker.publish(queue, f"{t}-{n}".encode(), message_id=f"{t}-{n}")

    workers = [threading.Thread(target=publish_batch, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    received.wait_for(threads * per_thread, timeout=30)
    received.stays_at(threads * per_thread, seconds=0.3)
    expected = {f"{t}-{n}".encode() for t in range(threads) for n in range(per_thread)}
    assert set(received.bodies) == expected


def test_queue_depth_and_purge(broker: Broker, queue: str) -> None:
    for n in range(3):
        broker.publish(queue, str(n).encode())
    assert broker.queue_depth(queue) == 3
    assert broker.purge(queue) == 3
    assert broker.queue_depth(queue) == 0
    assert broker.purge(queue) == 0


def test_queue_depth_of_an_undeclared_queue_is_an_error(broker: Broker, queue: str) -> None:
    with pytest.raises(BrokerError):
        broker.queue_depth(unique_queue("nowhere"))
    assert broker.queue_depth(queue) == 0  # and the adapter still works


def test_ping(broker: Broker) -> None:
    broker.ping()


# -- the factory --------------------------------------------------------------------------------


def test_factory_shares_one_in_process_broker_per_url() -> None:
    first = open_broker("memory://embedded-contract")
    assert isinstance(first, InProcessBroker)
    assert open_broker("memory://embedded-contract") is first
    assert open_broker("memory://other-contract") is not first


def test_factory_opens_rabbitmq_for_amqp_urls(rabbitmq_url: str) -> None:
    broker = open_broker(rabbitmq_url)
    try:
        assert isinstance(broker, RabbitBroker)
        broker.ping()
    finally:
        broker.close()


def test_factory_refuses_unknown_schemes() -> None:
    with pytest.raises(ConfigError, match="kafka"):
        open_broker("kafka://localhost:9092")


# -- RabbitMQ only: what only a real broker can show --------------------------------------------


@pytest.mark.rabbitmq
def test_rabbitmq_queues_are_durable_with_priorities_and_dead_lettering(
    rabbit: RabbitBroker, rabbitmq_url: str
) -> None:
    queue = unique_queue()
    rabbit.declare(queue)
    rabbit.publish(queue, b"{}")
    received = acking()
    rabbit.subscribe(queue, received, prefetch=1)
    [delivery] = received.wait_for(1)
    assert getattr(delivery, "persistent") is True

    definitions = queue_definitions(vhost_of(rabbitmq_url))
    main, twin = definitions[queue], definitions[dead_letter_queue(queue)]
    assert main["durable"] and twin["durable"]
    # rabbitmqctl's JSON gives arguments as [name, AMQP type, value] triples.
    assert {name: value for name, _type, value in main["arguments"]} == {
        "x-max-priority": 9,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": dead_letter_queue(queue),
    }
    assert not twin["arguments"]


@pytest.mark.rabbitmq
def test_rabbitmq_consumer_and_publisher_survive_a_forced_close(
    rabbit: RabbitBroker, rabbitmq_url: str
) -> None:
    queue = unique_queue()
    rabbit.declare(queue)
    received = acking()
    rabbit.subscribe(queue, received, prefetch=5)
    rabbit.publish(queue, b"before")
    received.wait_for(1)

    closed = close_connections(vhost_of(rabbitmq_url))
    assert len(closed) == 2  # the publisher's and the consumer's

    rabbit.publish(queue, b"after")  # the publisher reconnects by itself
    received.wait_for(2, timeout=20)  # and so does the consumer
    assert received.bodies == [b"before", b"after"]


@pytest.mark.rabbitmq
def test_rabbitmq_publisher_survives_a_forced_close(
    rabbit: RabbitBroker, rabbitmq_url: str
) -> None:
    queue = unique_queue()
    rabbit.declare(queue)
    rabbit.publish(queue, b"1")
    # Publish at once, before the keep-alive notices: publish itself must reconnect and retry.
    close_connections(vhost_of(rabbitmq_url), wait=False)
    rabbit.publish(queue, b"2")
    assert rabbit.queue_depth(queue) == 2


@pytest.mark.rabbitmq
def test_rabbitmq_long_held_delivery_keeps_the_connection(rabbitmq_url: str) -> None:
    """A delivery held for 3 heartbeat intervals while the I/O thread idles: no connection lost
    (the broker would requeue and redeliver the message), and the idle publisher survives too."""
    broker = RabbitBroker(rabbitmq_url, heartbeat=2)
    try:
        queue = unique_queue()
        broker.declare(queue)

        def hold_then_ack(delivery: Delivery) -> None:
            threading.Thread(target=lambda: (time.sleep(6), delivery.ack())).start()

        received = Collector(settle=hold_then_ack)
        broker.subscribe(queue, received, prefetch=1)
        broker.publish(queue, b"long step")
        received.wait_for(1)
        connections_before = connection_names(vhost_of(rabbitmq_url))

        assert len(connections_before) == 2  # the publisher's and the consumer's

        time.sleep(6.5)  # the worker acks at 6 s
        received.stays_at(1, seconds=1.0)  # a lost connection would have redelivered it
        assert connection_names(vhost_of(rabbitmq_url)) == connections_before
        broker.publish(queue, b"the idle publisher still works")
        received.wait_for(2)
        assert [d.redelivered for d in received.deliveries] == [False, False]
    finally:
        broker.close()


# -- the RabbitMQ adapter's pure decisions (no broker needed) ------------------------------------


def test_reconnect_delay_starts_small_and_doubles_up_to_a_low_cap() -> None:
    delays = [round(reconnect_delay(attempt, 1.0, unit_random=0.5), 3) for attempt in range(1, 7)]
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert 0.08 <= reconnect_delay(1, 1.0, unit_random=0.0) < 0.1  # jitter spreads the herd
    assert reconnect_delay(30, 1.0, unit_random=0.999) < 1.2  # never much past the cap


def test_logged_urls_hide_the_password() -> None:
    assert masked_url("amqp://baton:s3cret@mq:5672/prod") == "amqp://baton:***@mq:5672/prod"
    assert masked_url("amqp://mq:5672/") == "amqp://mq:5672/"
