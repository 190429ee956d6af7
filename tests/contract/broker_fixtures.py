"""Fixtures and helpers for the broker contract suite: one test set, every adapter."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from common.broker.inprocess import InProcessBroker
from common.broker.port import Broker, Delivery
from common.broker.rabbitmq import RabbitBroker
from tests.support.cluster import STATE_DEADLINE
from tests.support.vhosts import rabbitmqctl

ADAPTERS = ["inprocess", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)]

MakeBroker = Callable[..., Broker]


@pytest.fixture(params=ADAPTERS)
def make_broker(request: pytest.FixtureRequest) -> Iterator[MakeBroker]:
    """Builds brokers of the parametrized kind (RabbitMQ options pass through); closes them."""
    made: list[Broker] = []

    def make(**rabbit_options: Any) -> Broker:
        if request.param == "inprocess":
            broker: Broker = InProcessBroker()
        else:
            broker = RabbitBroker(request.getfixturevalue("rabbitmq_url"), **rabbit_options)
        made.append(broker)
        return broker

    yield make
    for broker in made:
        broker.close()


@pytest.fixture
def broker(make_broker: MakeBroker) -> Broker:
    return make_broker()


@pytest.fixture
def rabbit(rabbitmq_url: str) -> Iterator[RabbitBroker]:
    broker = RabbitBroker(rabbitmq_url)
    yield broker
    broker.close()


def unique_queue(label: str = "contract") -> str:
    return f"{label}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def queue(broker: Broker) -> str:
    name = unique_queue()
    broker.declare(name)
    return name


class Collector:
    """A handler keeping every delivery it is given; `settle` (if any) runs on each at once."""

    def __init__(self, settle: Callable[[Delivery], None] | None = None):
        self.deliveries: list[Delivery] = []
        self._settle = settle
        self._cond = threading.Condition()

    def __call__(self, delivery: Delivery) -> None:
        with self._cond:
            self.deliveries.append(delivery)
            self._cond.notify_all()
        if self._settle is not None:
            self._settle(delivery)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Delivery]:
        timeout = max(timeout, STATE_DEADLINE)  # a bound for a broken test, not a speed (as `eventually`)
        with self._cond:
            arrived = self._cond.wait_for(lambda: len(self.deliveries) >= count, timeout)
            assert arrived, f"{len(self.deliveries)} of {count} deliveries within {timeout} s"
            return list(self.deliveries)

    def stays_at(self, count: int, seconds: float = 0.5) -> None:
        """Assert that no more than `count` deliveries arrive within `seconds`."""
        time.sleep(seconds)
        with self._cond:
            assert len(self.deliveries) == count, [d.body for d in self.deliveries]

    @property
    def bodies(self) -> list[bytes]:
        with self._cond:
            return [d.body for d in self.deliveries]


def acking() -> Collector:
    return Collector(settle=lambda delivery: delivery.ack())


def eventually(check: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + max(timeout, STATE_DEADLINE)  # a bound for a broken test, not a speed
    while not check():
        assert time.monotonic() < deadline, f"{what} not reached within {max(timeout, STATE_DEADLINE)} s"
        time.sleep(0.05)


# -- RabbitMQ from the outside: rabbitmqctl, scoped to this test module's vhost -----------------


def vhost_of(url: str) -> str:
    return unquote(urlsplit(url).path.lstrip("/"))


def _rabbitmqctl_json(*args: str) -> Any:
    return json.loads(rabbitmqctl("-q", *args, "--formatter", "json"))


def connection_names(vhost: str) -> set[str]:
    rows = _rabbitmqctl_json("list_connections", "name", "vhost")
    return {row["name"] for row in rows if row["vhost"] == vhost}


def close_connections(vhost: str, *, wait: bool = True) -> set[str]:
    """Force-close this vhost's connections only (the broker is shared with others); returns the
    names of those closed. With `wait`, returns once they are all gone, which takes as long as a
    client needs to answer the broker's Connection.Close; the adapters may reconnect at once."""
    closed = connection_names(vhost)
    assert closed, f"no connections in {vhost} to close"
    rabbitmqctl("close_all_connections", "--vhost", vhost, "baton contract test")
    if wait:
        eventually(lambda: not closed & connection_names(vhost), what=f"{vhost} connections gone")
    return closed


def queue_definitions(vhost: str) -> dict[str, dict[str, Any]]:
    rows = _rabbitmqctl_json("list_queues", "-p", vhost, "name", "durable", "arguments")
    return {row["name"]: row for row in rows}
