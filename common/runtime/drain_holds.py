"""A drained module holds the runs it is handed instead of claiming them (docs/design/operations.md):
the run is marked held, the delivery acked, and the sweeper publishes it again until a claim after
the undrain, which records who undrained the module and why."""

from __future__ import annotations

import time

import structlog

from common.broker.port import Delivery
from common.engine.changes import Refusal, Timing, claim, drain_hold, release_hold
from common.engine.document import ItemRecord, StepMessage, Task
from common.errors import StoreError, UnreadableTask
from common.runtime.dead_letters import DeadLetters
from common.runtime.drain_watch import DrainWatch
from common.runtime.item_runs import ItemRuns, names_record
from common.runtime.outcome_writes import STORE_RETRY_PAUSE
from common.secrets.free_text import masked_free_text
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore

log = structlog.get_logger(__name__)


class DrainHolds:
    def __init__(self, module: str, owner: str, store: TaskStore, item_runs: ItemRuns, dead_letters: DeadLetters,
                 drains: DrainWatch | None) -> None:  # fmt: skip
        self._module = module
        self._owner = owner
        self._store = store
        self._item_runs = item_runs
        self._dead_letters = dead_letters
        self._drains = drains  # None: this module is never drained (tests that drive one in-process)

    def held(self, delivery: Delivery, message: StepMessage, timing: Timing) -> bool:
        """True when the module is drained and the delivery was dealt with here. An item kept in
        a record of its own is held on its record."""
        drain = self._drains.drained() if self._drains is not None else None
        if drain is None:
            return False
        try:
            read = self._item_runs.reads.get(message.TaskId) if message.Item is not None else None
            held: Task | ItemRecord | Refusal
            if read is not None and names_record(read, message):
                held = self._item_runs.hold(read, message, self._module, drain.Actor, drain.Reason, timing)
            else:
                held = mutate(self._store, message.TaskId,
                              lambda t: drain_hold(t, message, self._module, drain.Actor, drain.Reason, timing))
        except UnreadableTask as exc:
            self._dead_letters.send(delivery, str(exc), message)
            return True
        except StoreError as exc:
            log.warning("store unreachable; held delivery given back", error=str(exc))
            time.sleep(STORE_RETRY_PAUSE)
            delivery.requeue()
            return True
        delivery.ack()
        if isinstance(held, Refusal):
            log.info("delivery dropped while drained", reason=held.reason)
        else:
            # Stored masked; a record written before reasons were masked is masked here too.
            log.info("step held: module drained", drained_by=drain.Actor, reason=masked_free_text(drain.Reason))
        return True

    def undrain(self) -> tuple[str, str] | None:
        """Who undrained this module last, and why (None: not known here)."""
        undrain = self._drains.current() if self._drains is not None else None
        return (undrain.Actor, undrain.Reason) if undrain is not None else None

    def claim(self, task: Task, message: StepMessage, timing: Timing) -> Task | Refusal:
        """The claim; a run a drain held records who undrained the module as it goes."""
        claimed = claim(task, message, self._owner, timing)
        run = task.run(message.DispatchId)
        if isinstance(claimed, Task) and run is not None and run.HeldBy is not None:
            undrain = self.undrain()
            release_hold(claimed, message.DispatchId, *(undrain if undrain is not None else (None, None)), timing.now)
        return claimed
