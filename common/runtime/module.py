"""One module process: consumers, worker threads, command children, leases, graceful stop."""

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
from common.runtime.lease import LeaseKeeper
from common.runtime.registry import load_registry
from common.runtime.runner import CommandRunner
from common.runtime.step_handler import HandlerConfig, StepHandler
from common.settings import Settings
from common.store.modules_port import ModuleRegistry
from common.store.port import TaskStore
from common.engine.transitions import new_id

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
    ):
        self.metrics = metrics or RuntimeMetrics()
        registry = load_registry(registry_ref)
        self.module = registry.module
        self.owner = f"{self.module}@{socket.gethostname()}:{os.getpid()}:{new_id()[:6]}"
        # Announced while it runs (None: not announced, as in tests that drive one in-process).
        self._announcer = None if announce_to is None else Announcer(
            announce_to, self.owner, self.module, registry.names(), registry.version or baton_version(),
            settings.module_heartbeat_seconds, clock,
        )  # fmt: skip
        self._settings = settings
        self._broker = broker
        self._queues = {module_queue(self.module), ALARM_QUEUE, *queues_to_declare}
        self._extra = dict(extra_consumers or {})
        self._extra_source = extra_consumers  # Consumers: closed once they no longer receive
        self._runner = CommandRunner(
            registry_ref, settings.concurrency, settings.fault_injection, settings.log_format, settings.log_level,
            store_url=settings.store_url,
        )
        self._leases = LeaseKeeper(store, self.owner, settings.lease_seconds, settings.effective_heartbeat, clock)
        self._publisher = OutboxPublisher(
            store, broker, clock, mark_delay=mark_delay_for(settings.relay_grace_seconds), metrics=self.metrics,
            lease=settings.lease_seconds, redeliver_after=settings.redeliver_after_seconds,
        )
        config = HandlerConfig(
            module=self.module,
            owner=self.owner,
            lease=settings.lease_seconds,
            redeliver_after=settings.redeliver_after_seconds,
            fault_injection=settings.fault_injection,
        )
        self._handler = StepHandler(
            config, store, broker, self._runner, self._leases, self._publisher, clock, metrics=self.metrics
        )
        self._inbox = Inbox()
        self._subscriptions: list[Subscription] = []
        self._workers: list[threading.Thread] = []
        self._busy = 0
        self._busy_lock = threading.Lock()
        self._paused = False
        self._pause_lock = threading.Lock()  # the hold-limit watcher and workers both flip it
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None

    def start(self) -> None:
        self._runner.start()
        self._leases.start()
        for queue in sorted(self._queues | set(self._extra)):
            self._broker.declare(queue)
        for index in range(self._settings.concurrency):
            worker = threading.Thread(target=self._work, name=f"baton-worker-{index}", daemon=True)
            worker.start()
            self._workers.append(worker)
        self._watcher = threading.Thread(target=self._watch_waiting, name="baton-hold-limit", daemon=True)
        self._watcher.start()
        self._subscribe(module_queue(self.module), self._handler.handle)
        for queue, handle_body in self._extra.items():
            self._subscribe(queue, _settle_by_outcome(handle_body))
        if self._announcer is not None:  # consuming: now it serves its queue
            self._announcer.start()
        log.info("module started", module=self.module, owner=self.owner,
                 concurrency=self._settings.concurrency, queue=module_queue(self.module))

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
        for delivery in self._inbox.drain():
            delivery.requeue()
        self._inbox.put_stop(len(self._workers))
        deadline = time.monotonic() + grace
        for worker in self._workers:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
        finished = not any(w.is_alive() for w in self._workers)
        if not finished:
            log.warning("grace period over; stopping running commands", grace=grace)
        self._runner.close()
        for worker in self._workers:  # stopped commands: their workers release the steps
            worker.join(timeout=5)
        if self._watcher is not None:  # woken by _stopping; it may pause subscriptions: before they stop
            self._watcher.join(timeout=10)
        for subscription in self._subscriptions:
            subscription.stop()
        if isinstance(self._extra_source, Consumers):
            self._extra_source.close()
        self._leases.stop()
        self._publisher.stop()
        log.info("module stopped", module=self.module, clean=finished)
        return finished

    def _subscribe(self, queue: str, handle: Handle) -> None:
        def hand_over(delivery: Delivery) -> None:  # runs on the broker's I/O thread: no blocking
            self._inbox.put(delivery, handle)

        prefetch = self._settings.effective_prefetch
        self._subscriptions.append(self._broker.subscribe(queue, hand_over, prefetch=prefetch))

    def _work(self) -> None:
        while True:
            item = self._inbox.take()
            if item is None:
                return
            delivery, handle = item
            with self._busy_lock:
                self._busy += 1
            try:
                handle(delivery)
            except Exception as exc:  # a bug must not kill the worker; an unsettled delivery is dead-lettered
                # Type and place only: the message of an error about a task may quote its secrets.
                log.error("handler failed", error=type(exc).__name__, where=exception_summary(exc))
                delivery.dead_letter()
            finally:
                with self._busy_lock:
                    self._busy -= 1
                self._resume_if_idle()

    def _watch_waiting(self) -> None:
        """Give back deliveries left waiting past the hold limit, and pause until a worker frees."""
        limit = self._settings.hold_limit_seconds
        while not self._stopping.wait(min(limit / 4, 5.0)):
            stale = self._inbox.take_waiting_since(time.monotonic() - limit)
            if not stale:
                continue
            for delivery in stale:
                delivery.requeue()
            with self._pause_lock:
                if self._paused:
                    continue
                self._paused = True
            log.warning("every worker busy; consuming paused", given_back=len(stale))
            for subscription in self._subscriptions:
                subscription.pause()

    def _resume_if_idle(self) -> None:
        with self._pause_lock:
            if not self._paused or self._stopping.is_set() or self._busy >= len(self._workers):
                return
            self._paused = False
        log.info("a worker is free; consuming resumed")
        for subscription in self._subscriptions:
            subscription.resume()


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
