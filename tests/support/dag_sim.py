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
from common.engine.document import OutboxEntry, StepMessage, Task
from common.queues import ALARM_QUEUE
from common.engine.states import Phase, ResultCode
from common.engine.notifications import WEBHOOK
from common.store.mutate import mutate
from common.store.port import TaskStore
from common.engine.kinds.subflow import PUBLISH
from common.engine.transitions import AttemptResult, Refusal, Timing, claim, finish_attempt, mark_sent

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
    now: float = 1000.0
    alarms: list[dict] = field(default_factory=list)
    refused: int = 0
    deliveries: list[tuple[str, str, dict, str]] = field(default_factory=list)  # task, kind, body, id
    claimed: list[_Claimed] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.relay = ChildRelay(self.store, self.timing, self.flush)
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
            assert self.relay.apply(task_id, entry)
            mutate(self.store, task_id, lambda t: mark_sent(t, entry_id))
            return
        message = StepMessage.model_validate(body)
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
        done = mutate(self.store, run.task_id,
                      lambda t: finish_attempt(t, run.dispatch_id, "sim", result, self.timing()))
        assert not isinstance(done, Refusal), done
        self.flush(done)
