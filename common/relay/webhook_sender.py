"""The one webhook delivery piece: task notifications (common.relay.webhooks) and alarms
(modules.monitor.webhook) both go through it, with the same guarantees:

- At least once: a parcel is kept, and retried, until its receiver answers 2xx; the ledger (the
  caller's durable record) hears when it was taken, and when it will be tried again.
- A whole-request timeout (common.relay.http_deadline): a receiver that trickles its answer is cut off.
- Receivers are isolated: each has its own lane, a lane sends one POST at a time, and a few
  workers serve the lanes, so a slow or dead receiver holds at most one worker and never delays
  another receiver's events.
- Backoff per receiver: a failure puts the receiver's whole lane on hold for 0.5 s, doubling up
  to `backoff_max`, and the lane is tried again when that is due (not when a relay next looks),
  one POST per try, not one per held event.
- Signed: `X-Baton-Signature: sha256=<HMAC-SHA256 of the raw body>` when a secret is set.
- One `webhook_failing` alarm per receiver and outage once an event waited `alarm_after`.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from common.backoff import exponential
from common.engine.codes import AlarmKind
from common.relay import http_deadline
from common.logging import exception_summary
from common.engine.document import Alarm

log = structlog.get_logger(__name__)
Post = Callable[[str, bytes, dict[str, str], float], int]  # -> HTTP status; raises OSError
SIGNATURE_HEADER = "X-Baton-Signature"
FIRST_RETRY_SECONDS = 0.5
WEBHOOK_FAILING = AlarmKind.WEBHOOK_FAILING
WORKERS = 4  # receivers served at once; each receiver gets at most one
LANE_BACKLOG = 10_000  # events held per receiver; past it an offer is declined (the caller keeps it)
IDLE_CHECK_SECONDS = 1.0  # a worker looks at the clock at least this often


def signature(secret: str, body: bytes) -> str:
    """The X-Baton-Signature value: `sha256=` and the hex HMAC-SHA256 of the raw body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def retry_after(failures: int, cap: float) -> float:
    """Seconds until the next try of a receiver that failed `failures` times in a row."""
    return exponential(FIRST_RETRY_SECONDS, max(0, failures - 1), cap)


def receiver_name(url: str) -> str:
    """The receiver as logs and alarms may name it: host and a digest, never a token in its path."""
    return f"{urllib.parse.urlsplit(url).hostname}#{hashlib.sha256(url.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class Parcel:
    key: str  # unique: an offer of a key already held is ignored
    url: str
    body: bytes
    event: str
    event_id: str
    since: float  # when the event happened: its wait counts from here
    owner: str | None = None  # the task it is about, if any


class Ledger(Protocol):
    """The caller's durable record of its parcels. Called on a worker thread."""

    def delivered(self, parcel: Parcel) -> None: ...

    def deferred(self, parcels: list[Parcel], until: float) -> None: ...

    def alarm(self, alarm: Alarm) -> None: ...


@dataclass(frozen=True)
class SenderConfig:
    secret: str | None
    timeout: float = 5.0
    backoff_max: float = 30.0
    alarm_after: float = 900.0
    workers: int = WORKERS


@dataclass
class _Lane:
    url: str
    parcels: deque[Parcel] = field(default_factory=deque)
    fresh: list[Parcel] = field(default_factory=list)  # held while on hold, not yet deferred
    failures: int = 0
    retry_at: float = 0.0
    alarmed: bool = False
    busy: bool = False


class WebhookSender:
    def __init__(self, ledger: Ledger, config: SenderConfig, clock: Callable[[], float] = time.time,
                 post: Post = http_deadline.post, name: str = "baton-webhooks"):
        self._ledger = ledger
        self._config = config
        self._clock = clock
        self._post = post
        self._name = name
        self._cond = threading.Condition()
        self._lanes: dict[str, _Lane] = {}
        self._held: set[str] = set()
        self._workers: list[threading.Thread] = []
        self._stopped = False

    def offer(self, parcel: Parcel) -> bool:
        """Hold one parcel for delivery. Never waits; False when it is not taken (held already,
        its receiver's backlog is full, or the sender stopped): the caller offers it again later."""
        with self._cond:
            if self._stopped or parcel.key in self._held:
                return False
            lane = self._lanes.setdefault(parcel.url, _Lane(parcel.url))
            if len(lane.parcels) >= LANE_BACKLOG:
                return False
            self._held.add(parcel.key)
            lane.parcels.append(parcel)
            if lane.retry_at > self._clock():
                lane.fresh.append(parcel)
            self._start_workers()
            self._cond.notify()
        return True

    def stop(self) -> None:
        """No new POST starts; one in flight ends within the timeout."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            workers = list(self._workers)
        for worker in workers:
            if worker is not threading.current_thread():
                worker.join(self._config.timeout + 1)

    def _start_workers(self) -> None:
        while len(self._workers) < min(self._config.workers, len(self._lanes)):
            worker = threading.Thread(target=self._run, name=f"{self._name}-{len(self._workers)}", daemon=True)
            self._workers.append(worker)
            worker.start()

    def _run(self) -> None:
        while True:
            lane = self._next_lane()
            if lane is None:
                return
            try:
                self._serve(lane)
            except Exception as exc:  # one bad parcel must not end the worker; the lane stays
                log.error("webhook delivery failed unexpectedly", receiver=receiver_name(lane.url),
                          error=type(exc).__name__, where=exception_summary(exc))
            finally:
                with self._cond:
                    lane.busy = False
                    # Served: to the back of the line, so every receiver gets its turn.
                    self._lanes[lane.url] = self._lanes.pop(lane.url)
                    if not lane.parcels and not lane.failures:
                        del self._lanes[lane.url]
                    self._cond.notify_all()

    def _next_lane(self) -> _Lane | None:
        """The next lane with work that no other worker serves: a due try, or events to defer."""
        with self._cond:
            while not self._stopped:
                now = self._clock()
                soonest = now + IDLE_CHECK_SECONDS
                for lane in self._lanes.values():
                    if lane.busy or not lane.parcels:
                        continue
                    if lane.retry_at <= now or lane.fresh:
                        lane.busy = True
                        return lane
                    soonest = min(soonest, lane.retry_at)
                self._cond.wait(timeout=max(0.0, soonest - now))
            return None

    def _serve(self, lane: _Lane) -> None:
        with self._cond:
            fresh, lane.fresh = lane.fresh, []
            head = lane.parcels[0]
            retry_at = lane.retry_at
        if retry_at > self._clock():  # on hold: events that joined meanwhile wait for the same try
            self._ledger.deferred(fresh, retry_at)
            return
        problem = self._attempt(head)
        if problem is None:
            self._ledger.delivered(head)  # recorded before it is let go: no second offer meanwhile
            with self._cond:
                lane.parcels.popleft()
                self._held.discard(head.key)
                if lane.failures:
                    log.info("webhook receiver answers again", receiver=receiver_name(lane.url),
                             after_failures=lane.failures)
                lane.failures, lane.retry_at, lane.alarmed = 0, 0.0, False
            return
        now = self._clock()
        with self._cond:
            lane.failures += 1
            lane.retry_at = now + retry_after(lane.failures, self._config.backoff_max)
            waiting = list(lane.parcels)
            lane.fresh = []
        log.warning("webhook not delivered; retrying later", task_id=head.owner, webhook_event=head.event,
                    receiver=receiver_name(lane.url), error=problem, failures=lane.failures,
                    retry_in=round(lane.retry_at - now, 2), held=len(waiting))
        self._ledger.deferred(waiting, lane.retry_at)
        self._alarm_if_late(lane, waiting, now)

    def _attempt(self, parcel: Parcel) -> str | None:
        """POST it once; None when the receiver took it (2xx), else what went wrong."""
        headers = {"Content-Type": "application/json", "X-Baton-Event": parcel.event,
                   "X-Baton-Event-Id": parcel.event_id, "X-Baton-Timestamp": str(int(self._clock()))}
        if self._config.secret:
            headers[SIGNATURE_HEADER] = signature(self._config.secret, parcel.body)
        try:
            status = self._post(parcel.url, parcel.body, headers, self._config.timeout)
        except (OSError, ValueError) as exc:  # refused, reset, timed out, unreachable
            return type(exc).__name__
        return None if 200 <= status < 300 else f"HTTP {status}"

    def _alarm_if_late(self, lane: _Lane, waiting: list[Parcel], now: float) -> None:
        oldest = min(waiting, key=lambda p: p.since)
        waited = now - oldest.since
        if lane.alarmed or waited < self._config.alarm_after:
            return
        lane.alarmed = True  # once per receiver and outage; reset when it answers again
        name = receiver_name(lane.url)
        alarm = Alarm(
            AlarmId=f"{WEBHOOK_FAILING}:{name.rpartition('#')[2]}:{oldest.key}", Kind=WEBHOOK_FAILING,
            Time=now, TaskId=oldest.owner,
            Message=(f"webhook receiver {name} has not taken events for {int(waited)} s "
                     f"({lane.failures} failures in a row); they are kept and retried"),
        )
        self._ledger.alarm(alarm)
        log.error("webhook receiver failing", receiver=name, waited=int(waited), alarm_id=alarm.AlarmId)
