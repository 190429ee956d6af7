"""The broker port's publish that does not wait (`publish_soon`), on every adapter: its callback
is told the outcome `publish` would have raised or returned, and a callback that fails does not
stop the adapter. Against the real RabbitMQ (this module's own vhost) and the in-process broker."""

from __future__ import annotations

import threading

from common.broker.port import Broker
from common.errors import BrokerError, UnroutableMessage
from tests.contract.broker_fixtures import (  # noqa: F401  (fixtures)
    MakeBroker,
    acking,
    broker,
    make_broker,
    queue,
    unique_queue,
)
from tests.support.cluster import STATE_DEADLINE


class Outcomes:
    """What the callbacks were told, and on which thread."""

    def __init__(self) -> None:
        self.errors: list[BrokerError | None] = []
        self.threads: list[str] = []
        self._done = threading.Condition()

    def __call__(self, error: BrokerError | None) -> None:
        with self._done:
            self.errors.append(error)
            self.threads.append(threading.current_thread().name)
            self._done.notify_all()

    def wait_for(self, count: int, timeout: float = STATE_DEADLINE) -> list[BrokerError | None]:
        with self._done:
            assert self._done.wait_for(lambda: len(self.errors) >= count, timeout), self.errors
            return list(self.errors)


def test_each_publish_is_confirmed_to_its_callback_and_arrives_in_order(broker: Broker, queue: str) -> None:
    told = Outcomes()
    for n in range(20):
        broker.publish_soon(queue, f'{{"n": {n}}}'.encode(), priority=2, message_id=f"m-{n}", then=told)
    assert told.wait_for(20) == [None] * 20
    received = acking()
    broker.subscribe(queue, received, prefetch=5)
    deliveries = received.wait_for(20)
    assert [d.message_id for d in deliveries] == [f"m-{n}" for n in range(20)]
    assert all(d.priority == 2 for d in deliveries)


def test_an_unroutable_publish_is_told_so_and_the_adapter_goes_on(broker: Broker, queue: str) -> None:
    told = Outcomes()
    broker.publish_soon(unique_queue("nowhere"), b"{}", then=told)
    [error] = told.wait_for(1)
    assert isinstance(error, UnroutableMessage)
    broker.publish_soon(queue, b"{}", then=told)
    assert told.wait_for(2)[1] is None
    assert broker.queue_depth(queue) == 1


def test_a_failing_callback_does_not_stop_later_publishes(broker: Broker, queue: str) -> None:
    def broken(_error: BrokerError | None) -> None:
        raise RuntimeError("a bug in the caller's callback")

    told = Outcomes()
    try:
        broker.publish_soon(queue, b"1", then=broken)
    except RuntimeError:
        pass  # the in-process adapter calls back in the caller's thread: the caller's own bug
    broker.publish_soon(queue, b"2", then=told)
    assert told.wait_for(1) == [None]
    broker.publish(queue, b"3")  # and the waiting kind still works
    assert broker.queue_depth(queue) == 3


def test_after_close_the_callback_is_told_at_once(make_broker: MakeBroker) -> None:
    closed = make_broker()
    closed.close()
    told = Outcomes()
    closed.publish_soon(unique_queue(), b"{}", then=told)
    [error] = told.wait_for(1, timeout=0.1)
    assert isinstance(error, BrokerError)
    assert told.threads == [threading.current_thread().name]
