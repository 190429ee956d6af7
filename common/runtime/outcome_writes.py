"""Writing a command's outcome: on the task, or on an item's record, kept trying through a store
outage until the attempt's lease would lapse (the sweeper then runs the step again)."""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

from common.engine.changes import AttemptResult, Refusal, Timing, finish_attempt
from common.engine.document import ItemRecord, StepMessage, Task
from common.engine.states import ResultCode
from common.errors import StoreError, StoreRefused, UnreadableTask
from common.runtime.item_runs import ItemRuns
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore

log = structlog.get_logger(__name__)
STORE_RETRY_PAUSE = 1.0  # a store outage: wait this long before trying again


def write_outcome(
    store: TaskStore, item_runs: ItemRuns, owner: str, timing_now: Callable[[float], Timing],
    claimed: Task, message: StepMessage, result: AttemptResult, delay: float, record: ItemRecord | None = None,
) -> Task | ItemRecord | None:  # fmt: skip
    """The task (or record) as written, or None when nothing was: refused, or given up.

    The first try writes on the task as claimed, without reading it again: a short step's
    document has not changed since (a lease renewal or an operator makes it re-read)."""
    task_id, known = claimed.TaskId, claimed
    first = timing_now(delay)
    give_up = first.now + first.lease
    while True:
        timing = timing_now(delay)
        try:
            if record is not None:  # decided on the task as it is now: it may have turned back
                outcome: Task | ItemRecord | Refusal = item_runs.commit(record, item_runs.task_now(claimed), message,
                                                                        result, timing)  # fmt: skip
            else:
                outcome = mutate(store, task_id, lambda t: finish_attempt(t, message.DispatchId, owner, result, timing),
                                 known=known)  # fmt: skip
            known = None
        except StoreRefused as exc:
            if not result.ok and not result.retryable and not result.output:
                log.error("the store refuses even the failure; the sweeper will retry the step", error=str(exc))
                return None
            # The command's outcome (its output, say) cannot be stored, now or ever: record
            # the attempt as failed for good, so rollback starts instead of a retry loop.
            result = AttemptResult(ResultCode.FAILED, f"the outcome cannot be stored: {exc}", retryable=False)
            continue
        except UnreadableTask as exc:  # its document broke while the command ran
            log.error("could not record the outcome: the task cannot be read", reason=exc.reason)
            return None
        except StoreError as exc:
            if timing.now >= give_up:
                log.error("could not record the outcome; the sweeper will re-run the step", error=str(exc))
                return None
            time.sleep(STORE_RETRY_PAUSE)
            continue
        if isinstance(outcome, Refusal):
            log.warning("outcome refused", reason=outcome.reason)
            return None
        return outcome
