"""The sweeper: heals what crashes leave behind.

Per run: a task may have several (docs/design/protocol.md, "How each still holds with several
runs"), and one change handles all its lapsed ones.
- A RUNNING step whose lease lapsed (its worker died or froze): the attempt counts as failed and
  the step is retried or routed, exactly as if the worker had reported a failure.
- A PENDING dispatch nobody claimed for too long (its message was lost or purged): re-published.
- An outbox entry left unsent past a grace period (a crash between commit and publish): relayed;
  webhook entries are always handed from here to the webhook sender (common.relay.webhooks),
  which then retries them itself at their backoff (the grace is not waited again).
- Periodic jobs handed in by the process that runs it (due schedules, say), under the same lock:
  in OSS and `baton sweeper`, the schedules and the unserved-queue alarm (common/relay/unserved.py).

Safe to run in several processes: a lease-lock in the store lets one sweep at a time, and every
change is a compare-and-set anyway, so two sweepers racing would still not corrupt a task.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from common.backoff import retry_delay
from common.broker.port import Broker
from common.errors import BatonError, BrokerClosed, BrokerError, StoreClosed, StoreError
from common.logging import exception_summary
from common.metrics import RuntimeMetrics
from common.engine.document import Run, Task
from common.relay.outbox import OutboxPublisher
from common.engine.states import RunState
from common.store.tasks.mutate import mutate
from common.store.tasks.ended import count_ends
from common.store.tasks.port import TaskStore
from common.engine.registry import expiry
from common.engine.changes import Refusal, Timing, expire, new_id, sweep_waits
from common.relay.item_sweep import ItemSweep, note_expired
from common.relay.webhooks import WebhookDeliverer

log = structlog.get_logger(__name__)
LOCK_NAME = "sweeper"
BATCH = 500


class Job(Protocol):
    """Called with "now" once per round while this sweeper holds the lock; a BatonError it
    raises is logged and the round goes on. Closed when the sweeper stops."""

    def __call__(self, now: float) -> object: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class SweepConfig:
    lease: float
    redeliver_after: float
    relay_grace: float
    interval: float


@dataclass
class SweepReport:
    swept: bool = False  # False: another sweeper holds the lock
    leases_lapsed: int = 0
    redispatched: int = 0
    relayed: int = 0
    # Runs of items kept in records that the round published again because nobody claimed them:
    # the unserved-queue watch sees these (an index of every record's pending runs would cost
    # each round what the task document's own runs cost once).
    unclaimed_items: list[tuple[Task, Run]] = field(default_factory=list)


class Sweeper:
    def __init__(
        self,
        store: TaskStore,
        broker: Broker,
        config: SweepConfig,
        clock: Callable[[], float] = time.time,
        owner: str | None = None,
        rng: random.Random | None = None,
        metrics: RuntimeMetrics | None = None,
        jobs: Sequence[Job] = (),
        webhooks: WebhookDeliverer | None = None,
        on_unclaimed_items: Callable[[list[tuple[Task, Run]]], None] | None = None,
    ):
        self.metrics = metrics or RuntimeMetrics()
        count_ends(store, self.metrics.count_task_end)  # its timeouts' ends (in OSS: OSS's counter, named first)
        self._jobs = tuple(jobs)
        self._on_unclaimed_items = on_unclaimed_items
        self._store = store
        self._config = config
        self._clock = clock
        self.owner = owner or f"sweeper-{new_id()[:8]}"
        self._publisher = OutboxPublisher(store, broker, clock, metrics=self.metrics, lease=config.lease,
                                          redeliver_after=config.redeliver_after, webhooks=webhooks)
        self._rng = rng or random.Random()
        self._item_records = ItemSweep(store, self._publisher, config.lease, config.redeliver_after, clock,
                                       self._rng, self._one)

    def sweep_once(self) -> SweepReport:
        report = SweepReport()
        now = self._clock()
        if not self._store.try_lock(LOCK_NAME, self.owner, now, ttl=self._config.interval * 5 + 5):
            return report
        report.swept = True
        for task in self._store.due_for_sweep(now, BATCH):
            self._one(self._expire, task, report)
        for task in self._store.unsent_outbox(self._clock() - self._config.relay_grace, BATCH):
            self._one(self._relay, task, report)
        self._item_records.sweep(now, self._clock() - self._config.relay_grace, report)
        if self._on_unclaimed_items is not None:
            self._on_unclaimed_items(report.unclaimed_items)
        for job in self._jobs:
            try:
                job(self._clock())
            except BatonError as exc:
                log.warning("sweeper job failed", job=getattr(job, "__qualname__", repr(job)), error=str(exc))
        for action, count in (("lease_lapsed", report.leases_lapsed), ("redispatched", report.redispatched),
                              ("relayed", report.relayed)):
            if count:
                self.metrics.sweeper_actions.labels(action).inc(count)
        if report.leases_lapsed or report.redispatched or report.relayed:
            log.info("swept", lapsed=report.leases_lapsed, redispatched=report.redispatched, relayed=report.relayed)
        return report

    def run(self, stop: threading.Event) -> None:
        log.info("sweeper started", owner=self.owner, interval=self._config.interval)
        try:
            while not stop.is_set():
                try:
                    self.sweep_once()
                except (BrokerClosed, StoreClosed):
                    break  # closed under it by this process's shutdown: there is nothing more to do
                except BatonError as exc:  # store or broker down: try again next round
                    log.warning("sweep failed", error=str(exc))
                except Exception as exc:  # a bug must not end the sweeper thread: log it, go on
                    log.error("sweep failed unexpectedly", error=type(exc).__name__, where=exception_summary(exc))
                if self._publisher.closed:
                    break
                stop.wait(self._config.interval)
        finally:
            self.close()

    def close(self) -> None:
        """Its relay timers and webhook deliveries end, its jobs close, its lock goes: the caller
        then closes the store. `run` ends with it; whoever calls `sweep_once` alone calls it."""
        self._publisher.stop()
        for job in self._jobs:
            try:
                job.close()
            except Exception as exc:  # one job's failure to close must not keep the lock held
                log.error("a sweeper job failed to close", job=type(job).__name__, error=type(exc).__name__,
                          where=exception_summary(exc))  # fmt: skip
        try:
            self._store.release_lock(LOCK_NAME, self.owner)
        except StoreClosed:
            pass  # closed first by whoever stopped this sweeper: the lock's ttl frees it
        except BatonError as exc:  # the store is down: the lock's ttl frees it
            log.warning("could not release the sweeper lock", error=str(exc))

    def _one(self, work: Callable[[Task, SweepReport], None], task: Task, report: SweepReport) -> None:
        """One task's healing; its failure is logged and the batch goes on (one task must never
        hold up the others). A store or broker outage still ends the round: the rest would fail too."""
        try:
            work(task, report)
        except (StoreError, BrokerError):
            raise
        except Exception as exc:
            log.error("could not heal a task; skipped this round", task_id=task.TaskId,
                      error=type(exc).__name__, where=exception_summary(exc))

    def _expire(self, task: Task, report: SweepReport) -> None:
        now = self._clock()
        lapsed = [r for r in task.Runs if r.Deadline is not None and r.Deadline <= now]
        if not lapsed and expiry(task, now) is None:
            self._recheck_wait(task, now)
            return
        # Each lapsed lease's retry backs off by its own step's policy, drawn here (not in the
        # pure change, which may run again on a lost compare-and-set).
        delays = {r.DispatchId: retry_delay(task.Steps[r.Cursor].backoff(r.Phase), r.Attempt, self._rng.random())
                  for r in lapsed if r.State is RunState.RUNNING}
        timing = Timing(now, self._config.lease, self._config.redeliver_after)
        changed = mutate(self._store, task.TaskId, lambda t: expire(t, timing, retry_delays=delays))
        if isinstance(changed, Refusal):
            return
        for run in lapsed:
            note_expired(report, task.TaskId, run)
        self._publisher.flush(changed)

    def _recheck_wait(self, task: Task, now: float) -> None:
        """What a gate's wait owes the task now, each gate's own (a freeze window that has ended; the
        safety net under the outbox wake-up of a task waiting for another): applied, then logged."""
        owed = sweep_waits(task, now, self._store.get)
        if owed is None:
            return
        timing = Timing(now, self._config.lease, self._config.redeliver_after)
        changed = mutate(self._store, task.TaskId, lambda t: owed.change(t, timing))
        if isinstance(changed, Refusal):
            return
        if owed.log is not None:
            log.info(owed.log, task_id=task.TaskId, **owed.fields)
        if owed.flush:
            self._publisher.flush(changed)

    def _relay(self, task: Task, report: SweepReport) -> None:
        if self._publisher.closed:  # every later publish would fail the same way: end the round
            raise BrokerClosed("the broker adapter is closed")
        cutoff = self._clock() - self._config.relay_grace
        for entry in task.Outbox:
            if entry.DueAt <= cutoff and self._publisher.publish(task.TaskId, entry, mark_now=True):
                report.relayed += 1
