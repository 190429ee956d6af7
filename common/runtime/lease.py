"""Keeps the leases of the steps this module process runs alive, and says when one is lost.

One keeper renews every held lease, whatever the kind of its command. A lease lost (the sweeper
gave the step to someone else after this process froze, or the store was unreachable past the
deadline) sets the step's `lost` event and calls its `on_lost` callbacks: a process command's
child is killed, an async command cancelled, a thread command's attempt marked lost, and the
outcome is discarded rather than committed over the new owner.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import structlog

from common.errors import StoreError, UnreadableTask
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore
from common.engine.document import ItemRecord
from common.engine.changes import Refusal, Timing, renew_item_lease, renew_lease
from common.store.items.port import ItemStore
from common.store.retry import compare_and_set_loop

log = structlog.get_logger(__name__)


@dataclass
class Lease:
    task_id: str
    dispatch_id: str
    expires: float
    # (generation, cursor, item) when the run lives in an item's record
    # (docs/design/item-records.md).
    record: tuple[int, int, int] | None = None
    lost: threading.Event = field(default_factory=threading.Event)
    _callbacks: list[Callable[[], None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def on_lost(self, callback: Callable[[], None]) -> None:
        """Call `callback` once the lease is lost (at once if it already is)."""
        with self._lock:
            if not self.lost.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def lose(self) -> None:
        with self._lock:
            if self.lost.is_set():
                return
            self.lost.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception as exc:  # one callback's bug must not keep the others from running
                log.error("lease-lost callback failed", error=type(exc).__name__)


class LeaseKeeper:
    def __init__(self, store: TaskStore, owner: str, lease: float, interval: float, clock: Callable[[], float],
                 items: ItemStore | None = None):
        self._store = store
        self._items = items
        self._owner = owner
        self._lease = lease
        self._interval = interval
        self._clock = clock
        self._held: dict[str, Lease] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="baton-lease", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    @contextmanager
    def hold(self, task_id: str, dispatch_id: str, record: tuple[int, int, int] | None = None) -> Iterator[Lease]:
        lease = self.take(task_id, dispatch_id, record)
        try:
            yield lease
        finally:
            self.give_up(lease)

    def take(self, task_id: str, dispatch_id: str, record: tuple[int, int, int] | None = None) -> Lease:
        """Start renewing the lease of a claimed run (until give_up); `record`: the item record
        holding the run, (generation, cursor, item)."""
        lease = Lease(task_id, dispatch_id, self._clock() + self._lease, record)
        with self._lock:
            self._held[dispatch_id] = lease
        return lease

    def give_up(self, lease: Lease) -> None:
        with self._lock:
            if self._held.get(lease.dispatch_id) is lease:
                del self._held[lease.dispatch_id]

    def held(self) -> int:
        with self._lock:
            return len(self._held)

    def renew_all(self) -> None:
        with self._lock:
            leases = sorted(self._held.values(), key=lambda lease: lease.expires)  # nearest lapse first
        for lease in leases:
            self._renew(lease)

    def _renew(self, lease: Lease) -> None:
        # The deadline is stamped as the renewal is applied: on a busy task it may wait seconds
        # for its turn, and a deadline read before that wait would be that much short.
        stamped: list[Timing] = []

        def timing() -> Timing:
            stamped.append(Timing(now=self._clock(), lease=self._lease))
            return stamped[-1]

        try:
            result = self._renewed(lease, timing)
        except UnreadableTask as exc:  # its document broke under us: no outcome can be written
            log.error("lease given up: the task cannot be read", task_id=lease.task_id, reason=exc.reason)
            lease.lose()
            return
        except StoreError as exc:
            if self._clock() >= lease.expires:
                log.error("lease lapsed: store unreachable", task_id=lease.task_id, error=str(exc))
                lease.lose()
            return
        if isinstance(result, Refusal):
            if not self._still_held(lease):
                return  # the step ended between the snapshot and this renewal: nothing was lost
            log.warning("lease lost", task_id=lease.task_id, reason=result.reason)
            lease.lose()
        else:
            lease.expires = stamped[-1].now + self._lease

    def _renewed(self, lease: Lease, timing: Callable[[], Timing]) -> object:
        """`timing`: the timing of a try, read as the try is applied."""
        if lease.record is None:
            return mutate(self._store, lease.task_id, lambda t: renew_lease(t, lease.dispatch_id, self._owner, timing()))
        if self._items is None:
            raise StoreError("no item store to renew an item's lease in")
        items, (generation, cursor, item) = self._items, lease.record
        refusals: list[Refusal] = []

        def change(record: ItemRecord) -> ItemRecord | None:
            outcome = renew_item_lease(record, lease.dispatch_id, self._owner, timing())
            if isinstance(outcome, Refusal):
                refusals.append(outcome)
                return None
            return outcome

        read = lambda: items.get_item(lease.task_id, generation, cursor, item)  # noqa: E731
        written = compare_and_set_loop(read(), read=read, change=change, write=items.compare_and_set_item,
                                       what=f"item {lease.task_id}:{cursor}:{item}")
        return written if written is not None else (refusals[-1] if refusals else Refusal("the item is gone"))

    def _still_held(self, lease: Lease) -> bool:
        with self._lock:
            return self._held.get(lease.dispatch_id) is lease

    def _run(self) -> None:
        # Rounds start every `interval`, however long a round took: waiting a whole interval after
        # a slow round (a loaded machine, a busy store, hundreds of leases) would renew each lease
        # only every round + interval, and lose it once a round took longer than lease - interval.
        wait = self._interval
        while not self._stop.wait(wait):
            started = self._clock()
            self.renew_all()
            wait = next_wait(self._interval, self._clock() - started)


def next_wait(interval: float, round_took: float) -> float:
    """How long the keeper waits before its next round, `round_took` after the last one began."""
    return min(interval, max(0.0, interval - round_took))  # a clock stepped back waits no longer
