"""One module process: consumers, store threads, the three kinds of command, leases, graceful stop.

The broker's I/O thread only appends a delivery to the inbox and asks a store thread to take it.
A store thread parses it, waits for a slot of its command's kind (parked, not blocking), claims
it and starts the command; the command's end comes back to a store thread for its commit.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping

import structlog

from common.broker.port import Broker, Delivery, Subscription
from common.logging import exception_summary
from common.metrics import RuntimeMetrics
from common.relay.outbox import OutboxPublisher, mark_delay_for
from common.queues import ALARM_QUEUE, module_queue
from common.runtime.announce import Announcer, baton_version
from common.runtime.inbox import Handle, Inbox, TrackedDelivery
from common.runtime.drain_watch import DrainWatch
from common.runtime.dispatcher import Dispatcher
from common.runtime.lease import LeaseKeeper
from common.runtime.registry import load_registry
from common.runtime.step_handler import HandlerConfig, StepHandler
from common.runtime.waiting_line import overtake_after
from common.settings import Settings
from common.store.side.drains import ModuleDrains
from common.store.side.modules import ModuleRegistry
from common.store.tasks.ended import count_ends
from common.store.tasks.port import TaskStore
from common.engine.changes import new_id

log = structlog.get_logger(__name__)
BodyHandler = Callable[[bytes], None]  # an extra consumer (the monitor's alarm queue)


class Consumers(dict[str, BodyHandler]):
    """Extra consumers (queue -> handler) with background work of their own (a webhook sender):
    `close` stops it once nothing is delivered to them any more, before the store closes."""

    def __init__(self, handlers: Mapping[str, BodyHandler], close: Callable[[], None]):
        super().__init__(handlers)
        self._close = close

    def close(self) -> None:
        self._close()


class ModuleRuntime:
    def __init__(
        self,
        *,
        registry_ref: str,
        settings: Settings,
        store: TaskStore,
        broker: Broker,
        queues_to_declare: Iterable[str] = (),
        extra_consumers: Mapping[str, BodyHandler] | None = None,
        clock: Callable[[], float] = time.time,
        metrics: RuntimeMetrics | None = None,
        announce_to: ModuleRegistry | None = None,
        drains: ModuleDrains | None = None,
    ):
        self.metrics = metrics or RuntimeMetrics()
        count_ends(store, self.metrics.count_task_end)  # a task its writes end: counted here, once
        registry = load_registry(registry_ref)
        self.module = registry.module
        self.owner = f"{self.module}@{socket.gethostname()}:{os.getpid()}:{new_id()[:6]}"
        # Announced while it runs (None: not announced, as in tests that drive one in-process).
        self._announcer = None if announce_to is None else Announcer(
            announce_to, self.owner, self.module, registry.kinds(), registry.version or baton_version(),
            settings.module_heartbeat_seconds, clock,
        )  # fmt: skip
        self._settings = settings
        self._broker = broker
        self._queues = {module_queue(self.module), ALARM_QUEUE, *queues_to_declare}
        self._extra = dict(extra_consumers or {})
        self._extra_source = extra_consumers  # Consumers: closed once they no longer receive
        self._publisher = OutboxPublisher(
            store, broker, clock, mark_delay=mark_delay_for(settings.relay_grace_seconds), metrics=self.metrics,
            lease=settings.lease_seconds, redeliver_after=settings.redeliver_after_seconds,
        )
        items = self._publisher.item_store  # the runs of steps over item records live there
        self._dispatcher = Dispatcher(registry, registry_ref, settings, store, items)
        self._dispatcher.on_slot_freed = self._resume_if_idle
        self._leases = LeaseKeeper(store, self.owner, settings.lease_seconds, settings.effective_heartbeat, clock,
                                   items)
        # Its drain record, read before each claim (None: never drained, as in tests that drive one in-process).
        self._drain_watch = None if drains is None else DrainWatch(drains, self.module)
        config = HandlerConfig(
            module=self.module,
            owner=self.owner,
            lease=settings.lease_seconds,
            redeliver_after=settings.redeliver_after_seconds,
            fault_injection=settings.fault_injection,
            verify_limit=settings.verify_limit,
            delivery_limit=settings.queue_delivery_limit if settings.queue_type == "quorum" else None,
        )
        self._handler = StepHandler(
            config, store, broker, self._dispatcher, self._leases, self._publisher, clock, metrics=self.metrics,
            drains=self._drain_watch,
        )
        self._inbox = Inbox(overtake_after(settings.hold_limit_seconds))
        self._subscriptions: list[Subscription] = []
        self._paused = False
        self._pause_lock = threading.Lock()  # the watcher and the end of every command both flip it
        self._stopping = self._dispatcher.stopping
        # Set when too many thread commands are stuck: the process must be restarted (run_module
        # stops it and exits non-zero).
        self.failed = threading.Event()
        self._watcher: threading.Thread | None = None

    def start(self) -> None:
        self._dispatcher.start()
        self._leases.start()
        for queue in sorted(self._queues | set(self._extra)):
            self._broker.declare(queue)
        self._watcher = threading.Thread(target=self._watch, name="baton-watch", daemon=True)
        self._watcher.start()
        self._subscribe(module_queue(self.module), self._handler.handle)
        for queue, handle_body in self._extra.items():
            self._subscribe(queue, _settle_by_outcome(handle_body))
        if self._announcer is not None:  # consuming: now it serves its queue
            self._announcer.start()
        log.info("module started", module=self.module, owner=self.owner, queue=module_queue(self.module),
                 slots={kind: self._settings.slots(kind) for kind in self._dispatcher.kinds_used})

    def stop(self, grace: float | None = None) -> bool:
        """Stop consuming, let running steps finish within `grace`, then stop what is left.

        Returns True if every running step finished in time. A step whose command is stopped
        here is released: dispatched again at once for another replica, not counted as an
        attempt (at least once: its idempotency key makes the re-run safe).
        """
        grace = self._settings.shutdown_grace_seconds if grace is None else grace
        self._stopping.set()
        if self._announcer is not None:  # no longer taking work: no longer live
            self._announcer.stop()
        for subscription in self._subscriptions:
            subscription.pause()
        for delivery in self._inbox.drain() + self._dispatcher.slots.drain():
            delivery.requeue()
        finished = self._dispatcher.slots.wait_idle(grace)
        if not finished:
            log.warning("grace period over; stopping running commands", grace=grace)
            self._dispatcher.interrupt_all()  # each stopped command's step is released
            self._dispatcher.slots.wait_idle(10.0)
        if self._watcher is not None:  # woken by _stopping; it may pause subscriptions: before they stop
            self._watcher.join(timeout=10)
        for subscription in self._subscriptions:
            subscription.stop()
        if isinstance(self._extra_source, Consumers):
            self._extra_source.close()
        self._leases.stop()
        self._dispatcher.close()
        self._publisher.stop()
        if self._drain_watch is not None:
            self._drain_watch.close()
        log.info("module stopped", module=self.module, clean=finished)
        return finished

    def _subscribe(self, queue: str, handle: Handle) -> None:
        def hand_over(delivery: Delivery) -> None:  # runs on the broker's I/O thread: no blocking
            self._inbox.put(delivery, handle)
            self._dispatcher.submit(self._take_one)

        prefetch = self._dispatcher.prefetch
        self._subscriptions.append(self._broker.subscribe(queue, hand_over, prefetch=prefetch))

    def _take_one(self) -> None:
        """On a store thread: handle the oldest waiting delivery (one per hand-over; one given
        back meanwhile leaves nothing to take)."""
        item = self._inbox.take_nowait()
        if item is None:
            return
        delivery, handle = item
        if self._stopping.is_set():
            delivery.requeue()
            return
        try:
            handle(delivery)
        except Exception as exc:  # a bug must not kill the thread; an unsettled delivery is dead-lettered
            # Type and place only: the message of an error about a task may quote its secrets.
            log.error("handler failed", error=type(exc).__name__, where=exception_summary(exc))
            delivery.dead_letter()

    def _watch(self) -> None:
        """Every second: give back deliveries waiting past the hold limit (pausing until a slot
        frees), and stop the module once too many thread commands are stuck."""
        limit = self._settings.hold_limit_seconds
        next_hold_check = time.monotonic()
        while not self._stopping.wait(1.0):
            stuck = self._dispatcher.stuck_threads()
            if stuck > self._settings.stuck_threads_max and not self.failed.is_set():
                # A thread cannot be killed: only the end of this process stops a hung call.
                log.error("too many thread commands stuck past their timeout; the module stops to be restarted",
                          stuck=stuck, limit=self._settings.stuck_threads_max)
                self._pause()
                self.failed.set()
            if time.monotonic() >= next_hold_check:
                next_hold_check = time.monotonic() + min(limit / 4, 5.0)
                self._give_back_waiting(limit)

    def _give_back_waiting(self, limit: float) -> None:
        cutoff = time.monotonic() - limit
        stale = self._inbox.take_waiting_since(cutoff) + self._dispatcher.slots.take_parked_since(cutoff)
        if not stale:
            return
        for delivery in stale:
            delivery.requeue()
        if self._pause(unless_idle=True):
            log.warning("every slot busy; consuming paused", given_back=len(stale))

    def _pause(self, *, unless_idle: bool = False) -> bool:
        """Stop consuming until a slot frees (`_resume_if_idle`). `unless_idle`: not when no
        command runs, as the last may have ended since the deliveries were found waiting: no
        later end would resume.

        The flag and the subscriptions change under one lock, here and on resuming: flipped
        under it but applied after, a resume could run between this one's flag and its pause,
        and leave the subscriptions paused under a flag that says consuming (for good: a
        resume looks at the flag)."""
        with self._pause_lock:
            if self._paused or (unless_idle and self._dispatcher.slots.in_use() == 0):
                return False
            self._paused = True
            for subscription in self._subscriptions:
                subscription.pause()
        return True

    def _resume_if_idle(self) -> None:
        with self._pause_lock:
            if not self._paused or self._stopping.is_set() or self.failed.is_set():
                return
            self._paused = False
            for subscription in self._subscriptions:
                subscription.resume()
        log.info("a slot is free; consuming resumed")


def _settle_by_outcome(handle_body: BodyHandler) -> Handle:
    def handle(delivery: Delivery) -> None:
        try:
            handle_body(delivery.body)
        except Exception as exc:
            log.error("message dead-lettered", error=str(exc))
            delivery.dead_letter()
            return
        delivery.ack()

    return handle


__all__ = ["ModuleRuntime", "TrackedDelivery"]
