"""A simulated executor for graph flows: the engine's real pure changes, the real SQLite store and
the real sub-flow relay, with the broker and the modules replaced by a loop that delivers
messages and finishes claimed runs in an order the caller chooses (a hypothesis draw, say).

It plays every part a module and the outbox publisher play: claim a delivered step message,
finish the claim with an outcome from the failure plan, and apply child entries. What it checks
lives in the tests; here it only records alarms and duplicate claims refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from common.relay.child_relay import ChildRelay
from common.relay.items import ItemRelay
from common.engine.document import OutboxEntry, StepMessage, Task
from common.engine.kinds.for_each.item_record import ItemRecord
from common.engine.kinds.for_each.records import ITEM_KINDS, inline_view, keeps_records
from common.engine.kinds.for_each.item_changes import claim_item, finish_item_attempt
from common.store.items.port import ItemStore
from common.engine.core.units import none_if_refused
from common.store.retry import compare_and_set_loop
from common.queues import ALARM_QUEUE
from common.engine.states import Phase, ResultCode
from common.engine.core.notifications import WEBHOOK
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore
from common.engine.kinds.sub_flow.entries import PUBLISH
from common.engine.core.entries import AttemptResult, Refusal, Timing, claim, finish_attempt, mark_sent

Unit = tuple[int, int | None]
# (task type, cursor, item, phase) -> True: every attempt of that unit's phase fails.
FailPlan = Callable[[str, int, int | None, Phase], bool]


@dataclass
class _Claimed:
    task_id: str
    dispatch_id: str
    message: StepMessage


@dataclass
class Simulator:
    store: TaskStore
    fails: FailPlan
    # where steps over item records keep them (docs/design/item-records.md)
    items: ItemStore | None = None
    now: float = 1000.0
    alarms: list[dict] = field(default_factory=list)
    refused: int = 0
    deliveries: list[tuple[str, str, dict, str]] = field(default_factory=list)  # task, kind, body, id
    claimed: list[_Claimed] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.relay = ChildRelay(self.store, self.timing, self.flush)
        if self.items is not None:
            self.item_relay = ItemRelay(self.store, self.items, self.timing, self.flush, self.flush_item)
        self.webhooks: list[dict] = []  # task status notifications, as the sweeper would POST them

    def timing(self) -> Timing:
        self.now += 0.001
        return Timing(self.now, lease=30.0, redeliver_after=60.0)

    def submit(self, task: Task) -> None:
        self.store.insert(task)
        self.flush(task)

    def flush(self, task: Task) -> None:
        """What the outbox publisher does: hand every new entry to the 'broker'."""
        for entry in task.Outbox:
            if entry.DispatchId in self._seen:
                continue
            self._seen.add(entry.DispatchId)
            self.deliveries.append((task.TaskId, entry.Kind if entry.Queue != ALARM_QUEUE else "alarm",
                                    entry.Body, entry.DispatchId))

    def flush_item(self, record: ItemRecord) -> None:
        """What the outbox publisher does for a record's dispatch."""
        for entry in record.Outbox:
            if entry.DispatchId not in self._seen:
                self._seen.add(entry.DispatchId)
                self.deliveries.append((record.TaskId, entry.Kind, entry.Body, entry.DispatchId))

    def view(self, task: Task) -> Task:
        """`task` with the items of its steps over records inline, for the checks."""
        if self.items is None:
            return task
        records = {cursor: self.items.page_items(task.TaskId, task.Generation, cursor, limit=10_000)
                   for cursor, step in enumerate(task.Steps) if keeps_records(step)}
        return inline_view(task, records)

    def pending(self) -> int:
        return len(self.deliveries) + len(self.claimed)

    def step(self, pick: int, duplicate: bool = False) -> None:
        """Do one thing: deliver message `pick`, or finish claimed run `pick - len(deliveries)`."""
        if pick < len(self.deliveries):
            task_id, kind, body, entry_id = self.deliveries.pop(pick)
            if duplicate and kind == PUBLISH:  # delivered again later: the claim must refuse it
                self.deliveries.append((task_id, kind, body, entry_id))
                self._seen.add(entry_id)
            self._deliver(task_id, kind, body, entry_id)
            return
        self._finish(self.claimed.pop(pick - len(self.deliveries)))

    def run(self, choose: Callable[[int], int], duplicate: Callable[[], bool] = lambda: False,
            limit: int = 20_000) -> None:
        for _ in range(limit):
            if not self.pending():
                return
            self.step(choose(self.pending()), duplicate())
        raise AssertionError("the simulation did not settle")

    def _deliver(self, task_id: str, kind: str, body: dict, entry_id: str) -> None:
        if kind in ("alarm", WEBHOOK):
            (self.alarms if kind == "alarm" else self.webhooks).append(body)
            mutate(self.store, task_id, lambda t: mark_sent(t, entry_id))
            return
        if kind != PUBLISH:
            entry = OutboxEntry(DispatchId=entry_id, Kind=kind, Body=body, DueAt=self.now)
            assert (self.item_relay if kind in ITEM_KINDS else self.relay).apply(task_id, entry)
            mutate(self.store, task_id, lambda t: mark_sent(t, entry_id))
            return
        message = StepMessage.model_validate(body)
        if self._record_of(message) is not None:
            self._claim_item(message)
            return
        claimed = mutate(self.store, task_id, lambda t: claim(t, message, "sim", self.timing()))
        if isinstance(claimed, Refusal):
            self.refused += 1
            return
        self.claimed.append(_Claimed(task_id, message.DispatchId, message))

    def _finish(self, run: _Claimed) -> None:
        task = self.store.get(run.task_id)
        assert task is not None
        message = run.message
        failing = self.fails(task.TaskType, message.Cursor, message.Item, message.Type)
        result = AttemptResult(ResultCode.FAILED, "planned failure") if failing else \
            AttemptResult(ResultCode.OK, output={f"out_{message.Cursor}": message.Item})
        record = self._record_of(message)
        if record is not None:
            done_item = self._change_item(record, lambda r: finish_item_attempt(
                r, task, run.dispatch_id, "sim", result, self.timing(), self.item_relay._ids))
            assert done_item is not None
            self.flush_item(done_item)
            self.item_relay.apply_owes(done_item)
            return
        done = mutate(self.store, run.task_id,
                      lambda t: finish_attempt(t, run.dispatch_id, "sim", result, self.timing()))
        assert not isinstance(done, Refusal), done
        self.flush(done)

    def _record_of(self, message: StepMessage) -> ItemRecord | None:
        if self.items is None or message.Item is None:
            return None
        task = self.store.get(message.TaskId)
        if task is None or not keeps_records(task.Steps[message.Cursor]):
            return None
        return self.items.get_item(task.TaskId, task.Generation, message.Cursor, message.Item)

    def _claim_item(self, message: StepMessage) -> None:
        task = self.store.get(message.TaskId)
        record = self._record_of(message)
        assert task is not None and record is not None
        claimed = self._change_item(record, lambda r: claim_item(r, task, message.DispatchId, "sim", self.timing()))
        if claimed is None:
            self.refused += 1
            return
        self.claimed.append(_Claimed(message.TaskId, message.DispatchId, message))

    def _change_item(self, record: ItemRecord, change) -> ItemRecord | None:
        assert self.items is not None
        items = self.items
        return compare_and_set_loop(record, read=lambda: items.get_item(record.TaskId, record.Generation, record.Cursor,
                                                                       record.Item),
                                    change=none_if_refused(change), write=items.compare_and_set_item, what="item")
