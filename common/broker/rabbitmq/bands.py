"""One subscription over the band queues of a quorum-typed queue, highest band first.

Each band is consumed by its own RabbitSubscription (its own connection and I/O thread), with
the subscription's prefetch each: a band never waits for another's credit, and the handler (a
module's inbox) takes the highest priority it holds first. Consumers start highest band first,
so the first deliveries after a start come from the top. docs/DESIGN.md, "Queue topology", says
why this and not a strict poll of the bands.
"""

from __future__ import annotations

import contextlib

from common.broker.rabbitmq.consumer import RabbitSubscription


class BandedSubscription:
    def __init__(self, bands: list[RabbitSubscription]):
        self._bands = bands  # highest band first

    def start(self) -> None:
        started: list[RabbitSubscription] = []
        try:
            for band in self._bands:
                band.start()
                started.append(band)
        except BaseException:
            for band in started:
                with contextlib.suppress(Exception):
                    band.stop()
            raise

    def pause(self) -> None:
        for band in self._bands:
            band.pause()

    def resume(self) -> None:
        for band in self._bands:
            band.resume()

    def stop(self) -> None:
        for band in self._bands:
            band.stop()
