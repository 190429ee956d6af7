"""Many threads publishing at once: each waits for its own confirm, and learns its own outcome.

The first tests run against every adapter; the last ones break the RabbitMQ connection (or the
whole vhost) from the broker's side while publishes are in flight.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest

from common.broker.port import Broker
from common.broker.rabbitmq import RabbitBroker
from common.broker.rabbitmq.confirms import ConfirmTracker
from common.broker.rabbitmq.policy import ANSWER_SLACK_SECONDS, PUBLISH_DEADLINE_SECONDS
from common.errors import BrokerError, UnroutableMessage
from tests.contract.broker_fixtures import (  # noqa: F401  (fixtures)
    acking,
    broker,
    close_connections,
    eventually,
    make_broker,
    queue,
    rabbit,
    unique_queue,
    vhost_of,
)
from tests.support.cluster import STATE_DEADLINE
from tests.support.vhosts import rabbitmq_vhost, rabbitmqctl

# However the broker misbehaves, no publish may take longer than this.
LONGEST_PUBLISH = PUBLISH_DEADLINE_SECONDS + ANSWER_SLACK_SECONDS + 5.0


def run_threads(count: int, work: Callable[[int], None], *, timeout: float = STATE_DEADLINE) -> None:
    """Start `count` threads on `work(t)` together; fail if any is still running at `timeout`:
    a bound for a hung publish, not a speed (how long each publish took is `Tally.longest`)."""
    start = threading.Barrier(count)

    def run(t: int) -> None:
        start.wait()
        work(t)

    threads = [threading.Thread(target=run, args=(t,), daemon=True) for t in range(count)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not any(thread.is_alive() for thread in threads), "a publish hung"


def test_concurrent_publishes_are_all_confirmed_and_delivered_once(
    broker: Broker, queue: str
) -> None:
    threads, per_thread = 16, 200
    sent = [f"{t}-{n}".encode() for t in range(threads) for n in range(per_thread)]

    def publish_batch(t: int) -> None:
        for n in range(per_thread):
            broker.publish(queue, f"{t}-{n}".encode(), message_id=f"{t}-{n}")

    run_threads(threads, publish_batch)
    assert broker.queue_depth(queue) == len(sent)  # every publish returned only once confirmed
    received = acking()
    broker.subscribe(queue, received, prefetch=200)
    received.wait_for(len(sent), timeout=30)
    received.stays_at(len(sent), seconds=0.3)
    assert Counter(received.bodies) == Counter(sent)


def test_only_the_unroutable_publish_among_concurrent_ones_fails(
    broker: Broker, queue: str
) -> None:
    threads, per_thread = 8, 50
    nowhere = unique_queue("nowhere")
    outcomes: dict[tuple[int, int], str] = {}

    def publish_batch(t: int) -> None:
        for n in range(per_thread):
            # Thread 3 sends one message to a queue that does not exist, with the same body and
            # message id as its routable neighbours: the return must be matched to that publish.
            target = nowhere if (t, n) == (3, per_thread // 2) else queue
            try:
                broker.publish(target, b"same body", message_id="same-id")
                outcomes[(t, n)] = "confirmed"
            except UnroutableMessage:
                outcomes[(t, n)] = "unroutable"

    run_threads(threads, publish_batch)
    assert len(outcomes) == threads * per_thread
    assert {key for key, outcome in outcomes.items() if outcome == "unroutable"} == {
        (3, per_thread // 2)
    }
    assert broker.queue_depth(queue) == threads * per_thread - 1


class Tally:
    """What each publishing thread learned, and how long each publish took."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.confirmed: set[str] = set()
        self.failed: set[str] = set()
        self.longest = 0.0

    def publish(self, via: Broker, to: str, message_id: str) -> None:
        began = time.monotonic()
        try:
            via.publish(to, message_id.encode(), message_id=message_id)
            outcome = self.confirmed
        except BrokerError:
            outcome = self.failed
        with self.lock:
            outcome.add(message_id)
            self.longest = max(self.longest, time.monotonic() - began)


def count_abandoned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record how many unconfirmed publishes each lost channel held (white box: proves that
    the connection was closed under publishes in flight)."""
    abandoned: list[int] = []
    original = ConfirmTracker.abandon

    def abandon(self: ConfirmTracker) -> list:  # type: ignore[type-arg]
        items = original(self)
        abandoned.append(len(items))
        return items

    monkeypatch.setattr(ConfirmTracker, "abandon", abandon)
    return abandoned


@pytest.mark.rabbitmq
def test_rabbitmq_publishes_in_flight_at_a_forced_close_confirm_or_fail_never_lie(
    rabbit: RabbitBroker, rabbitmq_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = unique_queue()
    rabbit.declare(queue)
    rabbit.publish(queue, b"warm-up", message_id="warm-up")  # the connection exists
    abandoned = count_abandoned(monkeypatch)
    tally = Tally()
    # The close must catch publishes in flight (sent, not yet confirmed). On a loaded machine one
    # may land while every publish waits in the adapter's own queue instead: close again, up to
    # five rounds. Every round's publishes count for the checks below.
    for round_no in range(5):
        stop = threading.Event()

        def keep_publishing(t: int) -> None:
            n = 0
            while not stop.is_set():
                tally.publish(rabbit, queue, f"{round_no}-{t}-{n}")
                n += 1

        closer = threading.Thread(
            target=lambda: (
                time.sleep(0.3),
                close_connections(vhost_of(rabbitmq_url), wait=False),
                time.sleep(0.5),
                stop.set(),
            )
        )
        closer.start()
        run_threads(8, keep_publishing)
        closer.join()
        if sum(abandoned) > 0:
            break

    assert sum(abandoned) > 0, "no publish was in flight when the connection closed, in five rounds"
    assert tally.longest < LONGEST_PUBLISH
    # Every publish reported confirmed is in the queue (some perhaps twice: a publish whose
    # confirm the close swallowed is sent again); nothing arrives that was never published.
    received = acking()
    rabbit.subscribe(queue, received, prefetch=200)
    delivered: set[str] = set()

    def all_confirmed_arrived() -> bool:
        delivered.update(d.message_id or "" for d in received.deliveries)
        return tally.confirmed <= delivered

    # Thousands of publishes to take back: a state waited for (a loaded machine is slow to drain
    # them), and if one never comes, how many and which.
    try:
        eventually(all_confirmed_arrived, timeout=180, what="every confirmed publish delivered")
    except AssertionError:
        missing = sorted(tally.confirmed - delivered)
        raise AssertionError(f"{len(missing)} of {len(tally.confirmed)} confirmed publishes never "
                             f"delivered, e.g. {missing[:5]}") from None
    assert delivered - {"warm-up"} <= tally.confirmed | tally.failed
    rabbit.publish(queue, b"after", message_id="after")  # and the adapter works on
    eventually(lambda: "after" in {d.message_id for d in received.deliveries}, what="after")


@pytest.mark.rabbitmq
def test_rabbitmq_publishes_in_flight_when_the_vhost_goes_fail_in_bounded_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The broker refuses every reconnect (its vhost is gone): publishes end in BrokerError
    within the adapter's deadline, none hangs, and none claims a confirm it did not get.

    The deletion must catch publishes in flight (sent, not yet confirmed); on a loaded machine
    the publishing threads may all wait for a core as it lands: again with a new vhost, up to
    five rounds."""
    abandoned = count_abandoned(monkeypatch)
    for round_no in range(5):
        with rabbitmq_vhost(f"baton-contract-gone-{round_no}") as url:
            broker = RabbitBroker(url)
            try:
                tally = _publish_while_the_vhost_goes(broker, url)
                if sum(abandoned) == 0:
                    continue
                assert tally.failed, "publishes after the vhost went must fail"
                assert tally.longest < LONGEST_PUBLISH
                with pytest.raises(BrokerError):
                    broker.publish(unique_queue(), b"nowhere to go")
                return
            finally:
                broker.close()
    pytest.fail("no publish was in flight when the vhost went, in five rounds")


def _publish_while_the_vhost_goes(adapter: RabbitBroker, url: str) -> Tally:
    target = unique_queue()
    adapter.declare(target)
    adapter.publish(target, b"warm-up")
    tally, stop = Tally(), threading.Event()

    def keep_publishing(t: int) -> None:
        n = 0
        while not stop.is_set():
            tally.publish(adapter, target, f"{t}-{n}")
            n += 1

    def delete_vhost() -> None:
        time.sleep(0.3)
        rabbitmqctl("delete_vhost", vhost_of(url))
        time.sleep(1.0)
        stop.set()

    deleter = threading.Thread(target=delete_vhost)
    deleter.start()
    run_threads(8, keep_publishing)
    deleter.join()
    return tally
