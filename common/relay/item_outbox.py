"""Publishing an item record's dispatch (docs/design/item-records.md), as common.relay.outbox does a
task's: without waiting for the broker's confirm, a retry due later on a timer, and the entry
dropped from the record soon after the confirm unless its claim removed it first (it usually
has). A publish that fails or is never confirmed stays in the record for the sweeper's relay.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from common.broker.port import Broker
from common.engine.document import ItemRecord, OutboxEntry
from common.engine.changes import Refusal, none_if_refused
from common.errors import BrokerError, StoreError
from common.relay.encoding import encode
from common.store.items.port import ItemStore
from common.store.retry import compare_and_set_loop

log = structlog.get_logger(__name__)
RecordKey = tuple[str, int, int, int]  # TaskId, Generation, Cursor, Item


class ItemOutbox:
    def __init__(self, items: ItemStore, broker: Broker, clock: Callable[[], float],
                 at: Callable[[float, Callable[[], object]], None], mark_delay: float, horizon: float):
        self._items = items
        self._broker = broker
        self._clock = clock
        self._at = at  # runs a callback at a time (the publisher's timer thread)
        self._mark_delay = mark_delay
        self._horizon = horizon

    def flush(self, record: ItemRecord) -> None:
        """Publish the record's dispatch (its one entry), now or when it is due."""
        key = _key(record)
        now = self._clock()
        for entry in record.Outbox:
            if entry.DueAt > now:
                if entry.DueAt - now <= self._horizon:  # later ones: the relay, when due
                    self._at(entry.DueAt, lambda e=entry: self.publish(key, e))
                continue
            self._broker.publish_soon(entry.Queue, encode(entry), priority=entry.Priority, message_id=entry.DispatchId,
                                      then=lambda error, e=entry: self._confirmed(key, e, error))

    def publish(self, key: RecordKey, entry: OutboxEntry, *, mark_now: bool = False) -> bool:
        """Publish one entry and mark it sent (at once, or soon). False: it stays for the relay."""
        try:
            self._broker.publish(entry.Queue, encode(entry), priority=entry.Priority, message_id=entry.DispatchId)
        except BrokerError as exc:
            self._confirmed(key, entry, exc)
            return False
        if mark_now:
            self.mark_sent(key, entry.DispatchId)
        else:
            self._confirmed(key, entry, None)
        return True

    def _confirmed(self, key: RecordKey, entry: OutboxEntry, error: BrokerError | None) -> None:
        if error is not None:
            log.warning("publish failed; the relay will retry", task_id=key[0], item=key[3], error=str(error))
            return
        self._at(self._clock() + self._mark_delay, lambda: self.mark_sent(key, entry.DispatchId))

    def mark_sent(self, key: RecordKey, dispatch_id: str) -> None:
        """Drop the entry unless the claim did: one read, and a write only when it is still there."""
        def drop(record: ItemRecord) -> ItemRecord | Refusal:
            if not any(e.DispatchId == dispatch_id for e in record.Outbox):
                return Refusal("claimed already")
            new = record.model_copy(deep=True)
            new.Outbox = [e for e in new.Outbox if e.DispatchId != dispatch_id]
            return new

        read = lambda: self._items.get_item(*key)  # noqa: E731
        try:
            compare_and_set_loop(read(), read=read, change=none_if_refused(drop), write=self._items.compare_and_set_item,
                                 what=f"item {key}")
        except StoreError as exc:  # published, not marked: the relay publishes it again, the claim fences it
            log.warning("mark-sent failed", task_id=key[0], item=key[3], error=str(exc))


def _key(record: ItemRecord) -> RecordKey:
    return record.TaskId, record.Generation, record.Cursor, record.Item
