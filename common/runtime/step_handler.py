"""What a module does with one delivery: parse, wait for a slot of its command's kind, claim,
ack, start the command; and once it ended (on any store thread): commit, publish, free the slot.

Every write is a compare-and-set through a pure function of common.engine.core.entries, so a duplicate
or stale delivery, or a worker that froze past its lease, changes nothing.
"""

from __future__ import annotations

import contextvars
import dataclasses
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from common.broker.port import Broker, Delivery
from common.errors import StoreError, UnreadableTask
from common.logging import HotPathLogger, bound_fields
from common.secrets.log_lines import hidden_values
from common.secrets.documents import scrubbed_text
from common.secrets.values import secret_leaves, secret_values
from common.metrics import RuntimeMetrics
from common.engine.document import ItemRecord, StepMessage, Task
from common.runtime.claim_outcome import claimed_after_error
from common.runtime.item_runs import ItemRuns, names_record, record_key
from common.runtime.last_written import LastWritten
from common.relay.outbox import OutboxPublisher
from common.backoff import retry_delay
from common.runtime.crash_points import crash_point
from common.runtime.dead_letters import DeadLetters
from common.runtime.drain_holds import DrainHolds
from common.runtime.outcome_writes import STORE_RETRY_PAUSE, write_outcome
from common.runtime.dispatcher import Dispatcher
from common.runtime.drain_watch import DrainWatch
from common.engine.changes import (
    AttemptResult,
    Refusal,
    Timing,
    idempotency_key,
    release,
    run_key,
)
from common.runtime.inbox import TrackedDelivery
from common.runtime.invoke import CommandRequest
from common.queues import module_queue
from common.runtime.lease import Lease, LeaseKeeper
from common.store.tasks.mutate import mutate
from common.engine.states import Phase, ResultCode
from common.engine.views import command_parameters, unit_state
from common.runtime.verify import VerifyPlan, plan_for
from common.store.tasks.port import TaskStore
from common.tracing import attempts
from common.tracing.attempts import NoAttempt

log = HotPathLogger(__name__)  # a line or two at every step


@dataclass(frozen=True)
class HandlerConfig:
    module: str
    owner: str
    lease: float
    redeliver_after: float
    fault_injection: bool = False
    # Quorum queues: the broker's x-delivery-limit. The last delivery it allows is set aside
    # here, with an alarm, instead of run once more (it may be what killed its consumers).
    delivery_limit: int | None = None
    # unknown verdicts before an attempt ends OUTCOME_UNKNOWN (docs/design/runtime.md, "Verifying an
    # unknown outcome")
    verify_limit: int = 3
    last_written: int = 256  # tasks kept for their next step's claim here (common/runtime/last_written.py)


class StepHandler:
    def __init__(
        self,
        config: HandlerConfig,
        store: TaskStore,
        broker: Broker,
        dispatcher: Dispatcher,
        leases: LeaseKeeper,
        publisher: OutboxPublisher,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        metrics: RuntimeMetrics | None = None,
        drains: DrainWatch | None = None,
    ):
        self._metrics = metrics or RuntimeMetrics()
        self._config = config
        self._store = store
        self._broker = broker
        self._dispatcher = dispatcher
        self._leases = leases
        self._publisher = publisher
        self._clock = clock
        self._rng = rng or random.Random()
        self._item_runs = ItemRuns(store, publisher, config.owner)  # steps over item records
        self._dead_letters = DeadLetters(config.module, broker, self._metrics, clock, config.delivery_limit)
        self._holds = DrainHolds(config.module, config.owner, store, self._item_runs, self._dead_letters, drains)
        self._last = LastWritten(module_queue(config.module), config.last_written)  # claimed without a read

    def handle(self, delivery: TrackedDelivery) -> None:
        """Parse, then claim and start the command once a slot of its kind is free (parked
        until then: see common/runtime/slots.py). Returns once the command started."""
        message = self._dead_letters.parse(delivery)
        if message is None:
            return
        kind = self._dispatcher.kind_of(message.Command)

        def start() -> None:
            # Set once the command started: its end frees the slot then, even if something
            # raises here afterwards (leaving a block), which would otherwise free it twice.
            began: list[bool] = []
            attempt = attempts.begin(message, self._config.module)  # its spans (none when untraced)
            try:
                with attempt.current():
                    self._claim_and_start(delivery, message, attempt, began)
            finally:
                if not began:  # refused, given back, or a bug: the slot is free again
                    attempt.end()
                    self._dispatcher.release(kind)

        if self._dispatcher.admit(kind, delivery, start):
            start()

    def _claim_and_start(self, delivery: Delivery, message: StepMessage, attempt: NoAttempt,
                         began: list[bool]) -> bool:
        """True once the command started: its end then commits and frees the slot."""
        with bound_fields(
            task_id=message.TaskId, step=message.Cursor, item=message.Item, phase=message.Type.label,
            attempt=message.Attempt, module=self._config.module, command=message.Command,
        ):
            timing = self._timing()
            if self._holds.held(delivery, message, timing):
                return False
            record: ItemRecord | Refusal | None = None
            # The lease runs from the claim's write: on a busy task the write may wait seconds for
            # its turn, and a deadline stamped before that wait left the step that much less than
            # its lease (the sweeper then took a live worker for lost). `stamped`: the timing of
            # the last try, whose deadline claimed_after_error looks for.
            stamped = [timing]

            def claim_now(task: Task) -> Task | Refusal:
                stamped[0] = self._timing()
                return self._holds.claim(task, message, stamped[0])

            try:
                with attempt.child("claim"):
                    # An item's message: its run may live in its record (docs/design/item-records.md),
                    # claimed there on the task as read (shared, parsed again only when it changed).
                    read = self._item_runs.reads.get(message.TaskId) if message.Item is not None else None
                    if read is not None and names_record(read, message):
                        claimed, record = read, self._item_runs.claim(read, message, timing, self._holds.undrain)
                    else:
                        known = self._last.take(message.TaskId) if message.Item is None else None
                        claimed = mutate(self._store, message.TaskId, claim_now, known=known)
            except UnreadableTask as exc:  # nobody can run it: set it aside, name the task
                self._dead_letters.send(delivery, str(exc), message)
                return False
            except StoreError as exc:
                claimed, record = claimed_after_error(self._store, self._item_runs, self._config.owner, message,
                                                      stamped[0])  # fmt: skip
                if claimed is None:
                    log.warning("store unreachable; delivery given back", error=str(exc))
                    time.sleep(STORE_RETRY_PAUSE)
                    delivery.requeue()
                    return False
                log.info("claim written although the store's answer was lost", error=str(exc))
            refused = claimed if isinstance(claimed, Refusal) else record if isinstance(record, Refusal) else None
            if refused is not None:
                delivery.ack()  # a duplicate or stale delivery: the store already knows better
                self._metrics.deliveries_dropped.labels(self._config.module).inc()
                log.info("delivery dropped", reason=refused.reason)
                attempt.dropped(refused.reason)
                return False
            assert isinstance(claimed, Task)
            delivery.ack()  # acked right after the claim: the lease, not the delivery, guards the run
            attempt.claimed(claimed)
            # Secret values (a declared password, say) never reach a log line, even inside an
            # error message a command wrote, whatever thread or task the command runs in.
            hidden = self._secrets(claimed, record)  # the command's and its outcome's, too
            with bound_fields(task_type=claimed.TaskType), hidden_values(hidden):
                return self._start(claimed, message, attempt, hidden, record, began)

    def _start(self, task: Task, message: StepMessage, attempt: NoAttempt, hidden: list[str],
               record: ItemRecord | None, began: list[bool]) -> bool:
        # The item's value: from its record, or from the step's inline items.
        parameters = command_parameters(task, message.Cursor, message.Item, *([record.Value] if record else []))
        self._crash_point(parameters, message, "after_claim")
        step = task.Steps[message.Cursor]
        phase = message.Type
        # The document, not the message, says what to run: a message only points at a unit.
        request = CommandRequest(
            task_id=task.TaskId,
            task_type=task.TaskType,
            command=step.command_of(message.Item, phase),
            cursor=message.Cursor,
            phase=int(phase),
            attempt=message.Attempt,
            idempotency_key=idempotency_key(task.TaskId, message.Cursor, phase, task.Generation, message.Item),
            run_key=run_key(task.TaskId, task.Generation),
            parameters=parameters,
            dispatch_id=message.DispatchId,
            owner=self._config.owner,
            hidden=hidden,
        )
        if message.Item is not None:
            request.item_index = message.Item
            request.item = request.parameters["item"]
        request.verify = self._verify_plan(task, message, record)
        log.debug("step started")  # "step finished" (info) carries the outcome and duration
        started = time.monotonic()
        lease = self._leases.take(task.TaskId, message.DispatchId, record_key(record) if record else None)
        kind = self._dispatcher.kind_of(message.Command)
        attempt.start_command(kind)
        if kind == "process":
            request.trace = attempt.command_traceparent()  # its spans, made in its process, join the attempt's
            # A process command's child cannot kill its module: the module's timer does. A
            # thread or async command kills the module from inside itself (common/runtime/invoke.py).
            self._crash_point(parameters, message, "during_command", delay=0.2)
        # Two copies of this context (log fields, secrets to mask): one the command runs in, one
        # its outcome is committed in, later, on another thread.
        finish_in = contextvars.copy_context()

        def finish(outcome: AttemptResult | None) -> None:
            finish_in.run(self._finish, task, message, lease, started, outcome, record, parameters, attempt, hidden)

        with attempt.in_command():  # the command's own spans are children of its span
            command_context = contextvars.copy_context()
        try:
            self._dispatcher.start_command(request, step.timeout(phase), lease, command_context, finish)
        except Exception:
            self._leases.give_up(lease)  # never started: the lease lapses, the sweeper re-runs it
            attempt.command_ended(None)
            raise
        began.append(True)
        return True

    def _verify_plan(self, task: Task, message: StepMessage, record: ItemRecord | None) -> VerifyPlan | None:
        """Whether this attempt verifies an unknown outcome first (docs/design/runtime.md,
        "Verifying an unknown outcome"): the verify of the unit's normal command, with the normal
        phase's idempotency key."""
        step, phase = task.Steps[message.Cursor], message.Type
        if step.command_of(message.Item, phase) != step.command(phase):
            return None  # a page of a source: a read, run again as it is, verified by nothing
        if not self._dispatcher.verifies(step.command(Phase.NORMAL)):
            return None  # none declared here: the command runs as it always did
        unit = record if record is not None else unit_state(task, (message.Cursor, message.Item))
        count = unit.Verifies if phase is Phase.NORMAL else unit.RollbackVerifies
        key = idempotency_key(task.TaskId, message.Cursor, Phase.NORMAL, task.Generation, message.Item)
        again = retry_delay(step.backoff(phase), count + 1, self._rng.random())
        plan = plan_for(unit, phase, message.Attempt, step.command(Phase.NORMAL), key, self._config.verify_limit, again)
        if plan is not None:
            log.info("outcome unknown: verifying first", before=plan.mode, last_code=unit.Code.name if unit.Code else None,
                     verifies=plan.count, limit=plan.limit)
        return plan

    def _finish(self, task: Task, message: StepMessage, lease: Lease, started: float, outcome: AttemptResult | None,
                record: ItemRecord | None, parameters: dict, attempt: NoAttempt, hidden: list[str]) -> None:  # fmt: skip
        """The command ended (None: shutdown stopped it): commit its outcome, publish what
        follows, free its slot."""
        kind = self._dispatcher.kind_of(message.Command)
        attempt.command_ended(outcome)
        try:
            self._leases.give_up(lease)
            if outcome is None:
                self._release(task, message, record)
                return
            with attempt.child("commit"):  # current while it commits and publishes what follows
                self._conclude(task, message, lease, started, outcome, record, parameters, hidden)
        finally:
            attempt.end(outcome)
            self._dispatcher.release(kind)

    def _conclude(self, task: Task, message: StepMessage, lease: Lease, started: float, result: AttemptResult,
                  record: ItemRecord | None, parameters: dict, hidden: list[str]) -> None:  # fmt: skip
        step, phase = task.Steps[message.Cursor], message.Type
        elapsed = round(time.monotonic() - started, 4)
        labels = (self._config.module, step.command_of(message.Item, phase), phase.label)
        self._metrics.step_seconds.labels(*labels, result.code.name.lower()).observe(elapsed)
        if result.code is ResultCode.TIMED_OUT:
            self._metrics.timeouts.labels(*labels).inc()
        if lease.lost.is_set():
            log.warning("claim lost while running; outcome discarded", seconds=elapsed)
            return
        delay = 0.0 if result.ok else retry_delay(step.backoff(phase), message.Attempt, self._rng.random())
        # A command's error text may quote a secret parameter: it is stored scrubbed, so no
        # reader of the document (a search, a listing, an export) can ever see or match it.
        # (`hidden`: the claimed task's secret values, worked out at the claim.)
        scrubbed = scrubbed_text(result.message, task, hidden)
        if result.verified is not None or scrubbed != result.message:  # else the same result: no copy
            verified = result.verified and (result.verified[0], scrubbed_text(result.verified[1], task, hidden))
            result = dataclasses.replace(result, message=scrubbed, verified=verified or None)
        if result.verified is not None:
            log.info("verified", verdict=result.verified[0], reason=result.verified[1])
        self._crash_point(parameters, message, "before_commit")
        if record is not None:
            self._conclude_item(task, message, record, result, delay, elapsed, labels, parameters)
            return
        committed = self._commit(task, message, result, delay)
        if committed is None:
            return
        self._crash_point(parameters, message, "after_commit")
        status, hidden = committed.TaskStatus.name, secret_values(committed)  # its output may hold new ones
        self._count_outcome(committed, message, labels)
        owed = self._publisher.owed(committed)
        if message.Item is None:  # the last use of `committed` here: its next claim here may take it now
            self._last.keep(committed, self._clock())
        # What comes next goes out first: the next step's module starts while this one logs.
        self._publisher.flush(committed, lambda: self._crash_point(parameters, message, "after_publish"), owed)
        with hidden_values(hidden):
            if result.check_again is not None:  # the run ended; the unit's next check is in the outbox
                log.info("step checks again later", seconds=result.check_again, progress=result.message,
                         elapsed=elapsed, task_status=status)
            elif result.callback is not None:  # parked (or ended at once by a kept answer): its token never logged
                log.info("step waits for a callback", timeout=result.callback[0], heartbeat=result.callback[1],
                         elapsed=elapsed, task_status=status)
            else:
                log.info("step finished", ok=result.ok, code=result.code.name, error=result.message or None,
                         seconds=elapsed, task_status=status)

    def _conclude_item(self, task: Task, message: StepMessage, claimed: ItemRecord, result: AttemptResult,
                       delay: float, elapsed: float, labels: tuple[str, str, str], parameters: dict) -> None:
        """The outcome of an item's run on its record, then what it owes
        (docs/design/item-records.md, "The life of a step over records")."""
        committed = self._commit(task, message, result, delay, claimed)
        if committed is None:
            return
        assert isinstance(committed, ItemRecord)
        self._crash_point(parameters, message, "after_commit")
        self._item_runs.publish(committed)
        self._crash_point(parameters, message, "after_publish")
        if result.check_again is not None:
            log.info("step checks again later", seconds=result.check_again, progress=result.message,
                     elapsed=elapsed, item_state=committed.State.value)
        else:
            log.info("step finished", ok=result.ok, code=result.code.name, error=result.message or None,
                     seconds=elapsed, item_state=committed.State.value)
        run = committed.Run
        if run is not None and (run.Phase, run.Attempt) == (message.Type, message.Attempt + 1):
            self._metrics.retries.labels(*labels).inc()

    def _count_outcome(self, task: Task, message: StepMessage, labels: tuple[str, str, str]) -> None:
        again = (message.Cursor, message.Item, message.Type, message.Attempt + 1)
        if any((r.Cursor, r.Item, r.Phase, r.Attempt) == again for r in task.Runs):
            self._metrics.retries.labels(*labels).inc()

    def _release(self, task: Task, message: StepMessage, record: ItemRecord | None) -> None:
        """Shutdown stopped the command: hand the step straight back instead of failing it."""
        try:
            if record is not None:
                released: Task | ItemRecord | Refusal = self._item_runs.release(task, message, self._timing())
            else:
                released = mutate(self._store, task.TaskId,
                                  lambda t: release(t, message.DispatchId, self._config.owner, self._timing()))
        except (StoreError, UnreadableTask) as exc:
            log.warning("could not release the step; its lease will lapse", error=str(exc))
            return
        if isinstance(released, Refusal):
            return
        log.info("step released for another replica")
        if isinstance(released, ItemRecord):
            self._item_runs.publish(released)
        else:
            self._publisher.flush(released)

    def _commit(self, claimed: Task, message: StepMessage, result: AttemptResult, delay: float,
                record: ItemRecord | None = None) -> Task | ItemRecord | None:  # fmt: skip
        timing_now = lambda delay: Timing(self._clock(), self._config.lease, self._config.redeliver_after, delay)  # noqa: E731
        return write_outcome(self._store, self._item_runs, self._config.owner, timing_now, claimed, message, result,
                             delay, record)  # fmt: skip

    def _crash_point(self, parameters: dict, message: StepMessage, point: str, delay: float = 0.0) -> None:
        crash_point(self._config.fault_injection, parameters, message, point, delay)

    def _secrets(self, task: Task, record: ItemRecord | Refusal | None) -> list[str]:
        """The task's secret values: an item run of a step over records reads a task that stays
        the same for many items, whose parameters hold the whole list: worked out once."""
        if not isinstance(record, ItemRecord):
            return secret_values(task)
        # An item's value may hold secrets of its own (a source's items never were parameters).
        own = list(secret_leaves({"item": record.Value}, ())) if isinstance(record.Value, dict | list) else []
        return [*self._item_runs.reads.secrets(task), *own] if own else self._item_runs.reads.secrets(task)

    def _timing(self) -> Timing:
        return Timing(self._clock(), self._config.lease, self._config.redeliver_after)
