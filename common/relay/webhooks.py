"""Delivering the `webhook` outbox entries (common.engine.notifications): signed POSTs, off the sweeper's
thread, retried with capped exponential backoff while a receiver is down.

Who delivers: the sweeper (in OSS, or `baton sweeper`), through its outbox relay. A module's
publisher leaves webhook entries in the outbox, so an HTTP call never sits on a step's path and
the webhook secret lives only where the sweeper runs. The relay hands each entry due here
(`offer`, never blocks); one thread POSTs it with a timeout, then removes it from the outbox
(delivered) or moves its due time to the receiver's next try. The backoff is per receiver: one
failure puts every event for that URL on hold, so an outage costs one timeout per round, not one
per event. An event undelivered for BATON_WEBHOOK_ALARM_SECONDS raises one alarm per receiver
and outage; it is kept (and retried) until delivered: at least once, never dropped.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import queue
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from common.errors import StoreError, UnreadableTask
from common.logging import exception_summary
from common.engine.document import Alarm, OutboxEntry
from common.engine.notifications import postpone
from common.store.mutate import mutate
from common.store.port import TaskStore
from common.engine.transitions import Refusal, mark_sent

log = structlog.get_logger(__name__)
Post = Callable[[str, bytes, dict[str, str], float], int]  # -> HTTP status; raises OSError
SIGNATURE_HEADER = "X-Baton-Signature"
FIRST_RETRY_SECONDS = 0.5
WEBHOOK_FAILING = "webhook_failing"


def signature(secret: str, body: bytes) -> str:
    """The X-Baton-Signature value: `sha256=` and the hex HMAC-SHA256 of the raw body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def encode(entry: OutboxEntry) -> bytes:
    return json.dumps(entry.Body, separators=(",", ":"), sort_keys=True).encode()


def http_post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # http(s): checked on load
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def retry_after(failures: int, cap: float) -> float:
    """Seconds until the next try of a receiver that failed `failures` times in a row."""
    return min(cap, FIRST_RETRY_SECONDS * 2 ** max(0, failures - 1))


@dataclass(frozen=True)
class WebhookConfig:
    global_url: str | None  # BATON_WEBHOOK_URL: the target of entries whose Queue is ""
    secret: str | None
    timeout: float = 5.0
    backoff_max: float = 30.0
    alarm_after: float = 900.0


@dataclass
class _Receiver:
    failures: int = 0
    retry_at: float = 0.0
    alarmed: bool = False


class WebhookDeliverer:
    def __init__(self, store: TaskStore, config: WebhookConfig, clock: Callable[[], float] = time.time,
                 post: Post = http_post):
        self._store = store
        self._config = config
        self._clock = clock
        self._post = post
        self._queue: queue.Queue[tuple[str, OutboxEntry] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._in_flight: set[str] = set()
        self._receivers: dict[str, _Receiver] = {}
        self._thread: threading.Thread | None = None
        self._stopped = False

    def offer(self, task_id: str, entry: OutboxEntry) -> None:
        """Queue one entry for delivery unless it is queued already. Never waits."""
        with self._lock:
            if self._stopped or entry.DispatchId in self._in_flight:
                return
            self._in_flight.add(entry.DispatchId)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="baton-webhooks", daemon=True)
                self._thread.start()
        self._queue.put((task_id, entry))

    def stop(self, timeout: float = 2.0) -> None:
        with self._lock:
            self._stopped = True
            thread = self._thread
        self._queue.put(None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None or self._stopped:
                return
            task_id, entry = job
            try:
                self._deliver(task_id, entry)
            except Exception as exc:  # one bad entry must not end the thread; the relay offers it again
                log.error("webhook delivery failed unexpectedly", task_id=task_id, error=type(exc).__name__,
                          where=exception_summary(exc))
            finally:
                with self._lock:
                    self._in_flight.discard(entry.DispatchId)

    def _deliver(self, task_id: str, entry: OutboxEntry) -> None:
        url = entry.Queue or self._config.global_url
        if url is None:  # written while a global webhook was set; this sweeper has none
            log.warning("no BATON_WEBHOOK_URL for a global webhook event; kept", task_id=task_id)
            self._change(task_id, entry, self._clock() + self._config.backoff_max)
            return
        receiver = self._receivers.setdefault(url, _Receiver())
        now = self._clock()
        if now < receiver.retry_at:  # the receiver is down: wait with the others
            self._change(task_id, entry, receiver.retry_at)
            return
        problem = self._attempt(url, entry)
        if problem is None:
            if receiver.failures:
                log.info("webhook receiver answers again", receiver=_name(url), after_failures=receiver.failures)
            self._receivers[url] = _Receiver()
            self._change(task_id, entry, None)
            return
        receiver.failures += 1
        receiver.retry_at = self._clock() + retry_after(receiver.failures, self._config.backoff_max)
        log.warning("webhook not delivered; retrying later", task_id=task_id, webhook_event=entry.Body.get("Event"),
                    receiver=_name(url), error=problem, failures=receiver.failures,
                    retry_in=round(receiver.retry_at - self._clock(), 2))
        self._change(task_id, entry, receiver.retry_at)
        self._alarm_if_late(task_id, url, receiver, entry)

    def _attempt(self, url: str, entry: OutboxEntry) -> str | None:
        """POST it once; None when the receiver took it (2xx), else what went wrong."""
        body = encode(entry)
        headers = {"Content-Type": "application/json", "User-Agent": "baton-webhooks",
                   "X-Baton-Event": str(entry.Body.get("Event")), "X-Baton-Event-Id": str(entry.Body.get("EventId")),
                   "X-Baton-Timestamp": str(int(self._clock()))}
        if self._config.secret:
            headers[SIGNATURE_HEADER] = signature(self._config.secret, body)
        try:
            status = self._post(url, body, headers, self._config.timeout)
        except (OSError, ValueError) as exc:  # refused, reset, timed out, unreachable
            return type(exc).__name__
        return None if 200 <= status < 300 else f"HTTP {status}"

    def _change(self, task_id: str, entry: OutboxEntry, retry_at: float | None) -> None:
        """Delivered (retry_at None): drop the entry. Otherwise: due again at retry_at."""
        def change(task):  # type: ignore[no-untyped-def]
            if retry_at is None:
                return mark_sent(task, entry.DispatchId)
            return postpone(task, {entry.DispatchId}, retry_at) or Refusal("delivered meanwhile")
        try:
            mutate(self._store, task_id, change)
        except (StoreError, UnreadableTask) as exc:  # the relay offers it again
            log.warning("webhook outbox entry not updated", task_id=task_id, error=str(exc))

    def _alarm_if_late(self, task_id: str, url: str, receiver: _Receiver, entry: OutboxEntry) -> None:
        waited = self._clock() - float(entry.Body.get("Time") or entry.DueAt)
        if receiver.alarmed or waited < self._config.alarm_after:
            return
        receiver.alarmed = True  # once per receiver and outage; reset when it answers again
        alarm = Alarm(
            AlarmId=f"{WEBHOOK_FAILING}:{_digest(url)}:{entry.DispatchId}", Kind=WEBHOOK_FAILING,
            Time=self._clock(), TaskId=task_id,
            Message=(f"webhook receiver {_name(url)} has not taken events for {int(waited)} s "
                     f"({receiver.failures} failures in a row); they are kept and retried"),
        )
        try:
            self._store.add_alarm(alarm)
        except StoreError as exc:
            log.warning("webhook alarm not stored", error=str(exc))
        log.error("webhook receiver failing", receiver=_name(url), waited=int(waited), alarm_id=alarm.AlarmId)


def _digest(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()[:12]


def _name(url: str) -> str:
    """The receiver as logs and alarms may name it: host and a digest, never a token in its path."""
    return f"{urllib.parse.urlsplit(url).hostname}#{_digest(url)}"
