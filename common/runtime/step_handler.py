"""What a module does with one delivery: parse, wait for a slot of its command's kind, claim,
ack, start the command; and once it ended (on any store thread): commit, publish, free the slot.

Every write is a compare-and-set through a pure function of common.engine.transitions, so a duplicate
or stale delivery, or a worker that froze past its lease, changes nothing.
"""

from __future__ import annotations

import contextvars
import dataclasses
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from pydantic import ValidationError

from common.broker.port import Broker, Delivery
from common.errors import BrokerError, StoreError, StoreRefused, UnreadableTask
from common.logging import hidden_values
from common.masking import scrubbed_text, secret_values
from common.metrics import RuntimeMetrics
from common.engine.document import Alarm, StepMessage, Task, named_task
from common.engine.item_record import ItemRecord
from common.runtime.item_runs import ItemRuns, names_record, record_key
from common.relay.outbox import OutboxPublisher
from common.queues import ALARM_QUEUE
from common.backoff import retry_delay
from common.runtime.faults import BadFaultRule, faults_for
from common.runtime.dispatcher import Dispatcher
from common.runtime.drain_watch import DrainWatch
from common.engine.gates.drain import drain_hold, release_hold
from common.runtime.inbox import TrackedDelivery
from common.runtime.invoke import CommandRequest
from common.runtime.lease import Lease, LeaseKeeper
from common.store.mutate import mutate
from common.engine.states import FINAL_STATUSES, Phase, ResultCode, RunState
from common.engine.routing import unit_state
from common.runtime.verify import VerifyPlan, plan_for
from common.store.port import TaskStore
from common.engine.unit_parameters import command_parameters
from common.engine.transitions import (
    AttemptResult,
    Refusal,
    Timing,
    claim,
    finish_attempt,
    idempotency_key,
    new_id,
    release,
    run_key,
)

log = structlog.get_logger(__name__)
STORE_RETRY_PAUSE = 1.0  # a store outage: wait this long before giving a delivery back


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
    verify_limit: int = 3  # unknown verdicts before an attempt ends OUTCOME_UNKNOWN (DESIGN.md 13.1)


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
        self._drains = drains  # None: this module is never drained (tests that drive one in-process)
        self._config = config
        self._store = store
        self._broker = broker
        self._dispatcher = dispatcher
        self._leases = leases
        self._publisher = publisher
        self._clock = clock
        self._rng = rng or random.Random()
        self._item_runs = ItemRuns(store, publisher, config.owner)  # steps over item records

    def handle(self, delivery: TrackedDelivery) -> None:
        """Parse, then claim and start the command once a slot of its kind is free (parked
        until then: see common/runtime/slots.py). Returns once the command started."""
        message = self._parse(delivery)
        if message is None:
            return
        kind = self._dispatcher.kind_of(message.Command)

        def start() -> None:
            started = False
            try:
                started = self._claim_and_start(delivery, message)
            finally:
                if not started:  # refused, given back, or a bug: the slot is free again
                    self._dispatcher.release(kind)

        if self._dispatcher.admit(kind, delivery, start):
            start()

    def _claim_and_start(self, delivery: Delivery, message: StepMessage) -> bool:
        """True once the command started: its end then commits and frees the slot."""
        with structlog.contextvars.bound_contextvars(
            task_id=message.TaskId, step=message.Cursor, item=message.Item, phase=message.Type.label,
            attempt=message.Attempt, module=self._config.module, command=message.Command,
        ):
            timing = self._timing()
            if self._held_by_drain(delivery, message, timing):
                return False
            record: ItemRecord | Refusal | None = None
            try:
                # An item's message: its run may live in its record (DESIGN.md sec. 12), claimed
                # there on the task as read (shared, parsed again only when it changed).
                read = self._item_runs.reads.get(message.TaskId) if message.Item is not None else None
                if read is not None and names_record(read, message):
                    claimed, record = read, self._item_runs.claim(read, message, timing, self._undrain)
                else:
                    claimed = mutate(self._store, message.TaskId, lambda t: self._claim(t, message, timing))
            except UnreadableTask as exc:  # nobody can run it: set it aside, name the task
                self._dead_letter(delivery, str(exc), message)
                return False
            except StoreError as exc:
                claimed, record = self._claim_outcome(message, timing)
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
                return False
            assert isinstance(claimed, Task)
            delivery.ack()  # acked right after the claim: the lease, not the delivery, guards the run
            # Secret values (a declared password, say) never reach a log line, even inside an
            # error message a command wrote, whatever thread or task the command runs in.
            with structlog.contextvars.bound_contextvars(task_type=claimed.TaskType), \
                    hidden_values(self._secrets(claimed, record)):
                return self._start(claimed, message, record)

    def _held_by_drain(self, delivery: Delivery, message: StepMessage, timing: Timing) -> bool:
        """The module is drained (DESIGN.md sec. 10): the run is held, not claimed, and the
        delivery acked; the sweeper publishes it again until a claim after the undrain. True when
        the delivery was dealt with here. An item kept in a record of its own is held on its record."""
        drain = self._drains.drained() if self._drains is not None else None
        if drain is None:
            return False
        module = self._config.module
        try:
            read = self._item_runs.reads.get(message.TaskId) if message.Item is not None else None
            held: Task | ItemRecord | Refusal
            if read is not None and names_record(read, message):
                held = self._item_runs.hold(read, message, module, drain.Actor, drain.Reason, timing)
            else:
                held = mutate(self._store, message.TaskId,
                              lambda t: drain_hold(t, message, module, drain.Actor, drain.Reason, timing))
        except UnreadableTask as exc:
            self._dead_letter(delivery, str(exc), message)
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
            log.info("step held: module drained", drained_by=drain.Actor, reason=drain.Reason)
        return True

    def _undrain(self) -> tuple[str, str] | None:
        """Who undrained this module last, and why (None: not known here)."""
        undrain = self._drains.current() if self._drains is not None else None
        return (undrain.Actor, undrain.Reason) if undrain is not None else None

    def _claim(self, task: Task, message: StepMessage, timing: Timing) -> Task | Refusal:
        """The claim; a run a drain held records who undrained the module as it goes."""
        claimed = claim(task, message, self._config.owner, timing)
        run = task.run(message.DispatchId)
        if isinstance(claimed, Task) and run is not None and run.HeldBy is not None:
            undrain = self._undrain()
            release_hold(claimed, message.DispatchId, *(undrain if undrain is not None else (None, None)), timing.now)
        return claimed

    def _claim_outcome(self, message: StepMessage, timing: Timing) -> tuple[Task | None, ItemRecord | None]:
        """After a StoreError during the claim: the task if OUR claim was written after all.

        A timeout or a dropped connection leaves the write's fate unknown. Giving the delivery back
        would waste the attempt: its redelivery finds the task "already claimed" (by us) and the
        step waits for the lease to lapse (a `retry: 0` step then rolls back). Ours means this
        owner, this dispatch, and the lease deadline this very call wrote: a duplicate delivery
        of the same dispatch running in this process has its own deadline (or renewed it since),
        so it is never taken for ours. None when it was not written, or the store cannot tell.
        An item of a step over records: the task and the record, when the record says so."""
        try:
            task = self._store.get(message.TaskId)
        except StoreError:
            return None, None
        if task is not None and names_record(task, message):
            record = self._item_runs.claimed_after_error(task, message, timing)
            return (task, record) if record is not None else (None, None)
        active = task.run(message.DispatchId) if task is not None else None
        ours = (
            active is not None
            and active.DispatchId == message.DispatchId
            and active.State is RunState.RUNNING
            and active.Owner == self._config.owner
            and active.Deadline == timing.now + timing.lease
        )
        return (task, None) if ours else (None, None)

    def _start(self, task: Task, message: StepMessage, record: ItemRecord | None = None) -> bool:
        # The item's value: from its record, or from the step's inline items.
        parameters = command_parameters(task, message.Cursor, message.Item, *([record.Value] if record else []))
        self._crash_point(parameters, message, "after_claim")
        step = task.Steps[message.Cursor]
        phase = message.Type
        # The document, not the message, says what to run: a message only points at a unit.
        request = CommandRequest(
            task_id=task.TaskId,
            task_type=task.TaskType,
            command=step.command(phase),
            cursor=message.Cursor,
            phase=int(phase),
            attempt=message.Attempt,
            idempotency_key=idempotency_key(task.TaskId, message.Cursor, phase, task.Generation, message.Item),
            run_key=run_key(task.TaskId, task.Generation),
            parameters=parameters,
            dispatch_id=message.DispatchId,
            owner=self._config.owner,
            hidden=self._secrets(task, record),
        )
        if message.Item is not None:
            request.item_index = message.Item
            request.item = request.parameters["item"]
        request.verify = self._verify_plan(task, message, record)
        log.debug("step started")  # "step finished" (info) carries the outcome and duration
        started = time.monotonic()
        lease = self._leases.take(task.TaskId, message.DispatchId, record_key(record) if record else None)
        if self._dispatcher.kind_of(message.Command) == "process":
            # A process command's child cannot kill its module: the module's timer does. A
            # thread or async command kills the module from inside itself (common/runtime/invoke.py).
            self._crash_point(parameters, message, "during_command", delay=0.2)
        # Two copies of this context (log fields, secrets to mask): one the command runs in, one
        # its outcome is committed in, later, on another thread.
        finish_in = contextvars.copy_context()

        def finish(outcome: AttemptResult | None) -> None:
            finish_in.run(self._finish, task, message, lease, started, outcome, record, parameters)

        try:
            self._dispatcher.start_command(request, step.timeout(phase), lease, contextvars.copy_context(), finish)
        except Exception:
            self._leases.give_up(lease)  # never started: the lease lapses, the sweeper re-runs it
            raise
        return True

    def _verify_plan(self, task: Task, message: StepMessage, record: ItemRecord | None) -> VerifyPlan | None:
        """Whether this attempt verifies an unknown outcome first (DESIGN.md 13.1): the verify of
        the unit's normal command, with the normal phase's idempotency key."""
        step, phase = task.Steps[message.Cursor], message.Type
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

    def _finish(self, task: Task, message: StepMessage, lease: Lease, started: float,
                outcome: AttemptResult | None, record: ItemRecord | None, parameters: dict) -> None:  # fmt: skip
        """The command ended (None: shutdown stopped it): commit its outcome, publish what
        follows, free its slot."""
        kind = self._dispatcher.kind_of(message.Command)
        try:
            self._leases.give_up(lease)
            if outcome is None:
                self._release(task, message, record)
                return
            self._conclude(task, message, lease, started, outcome, record, parameters)
        finally:
            self._dispatcher.release(kind)

    def _conclude(self, task: Task, message: StepMessage, lease: Lease, started: float,
                  result: AttemptResult, record: ItemRecord | None, parameters: dict) -> None:  # fmt: skip
        step, phase = task.Steps[message.Cursor], message.Type
        elapsed = round(time.monotonic() - started, 4)
        labels = (self._config.module, step.command(phase), phase.label)
        self._metrics.step_seconds.labels(*labels, result.code.name.lower()).observe(elapsed)
        if result.code is ResultCode.TIMED_OUT:
            self._metrics.timeouts.labels(*labels).inc()
        if lease.lost.is_set():
            log.warning("claim lost while running; outcome discarded", seconds=elapsed)
            return
        delay = 0.0 if result.ok else retry_delay(step.backoff(phase), message.Attempt, self._rng.random())
        # A command's error text may quote a secret parameter: it is stored scrubbed, so no
        # reader of the document (a search, a listing, an export) can ever see or match it.
        hidden = self._secrets(task, record)
        verified = result.verified and (result.verified[0], scrubbed_text(result.verified[1], task, hidden))
        result = dataclasses.replace(result, message=scrubbed_text(result.message, task, hidden), verified=verified or None)
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
        # What comes next goes out first: the next step's module starts while this one logs.
        self._publisher.flush(committed, lambda: self._crash_point(parameters, message, "after_publish"))
        with hidden_values(secret_values(committed)):  # the command's output may hold new ones
            if result.check_again is not None:  # the run ended; the unit's next check is in the outbox
                log.info("step checks again later", seconds=result.check_again, progress=result.message,
                         elapsed=elapsed, task_status=committed.TaskStatus.name)
            else:
                log.info("step finished", ok=result.ok, code=result.code.name, error=result.message or None,
                         seconds=elapsed, task_status=committed.TaskStatus.name)
        self._count_outcome(committed, message, labels)

    def _conclude_item(self, task: Task, message: StepMessage, claimed: ItemRecord, result: AttemptResult,
                       delay: float, elapsed: float, labels: tuple[str, str, str], parameters: dict) -> None:
        """The outcome of an item's run on its record, then what it owes (DESIGN.md 12.3)."""
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

    def _commit(self, claimed: Task, message: StepMessage, result: AttemptResult, delay: float,
                record: ItemRecord | None = None) -> Task | ItemRecord | None:
        """Record the outcome; keep trying through a store outage until our lease would lapse.

        The first try writes on the task as claimed, without reading it again: a short step's
        document has not changed since (a lease renewal or an operator makes it re-read)."""
        task_id, known = claimed.TaskId, claimed
        give_up = self._clock() + self._config.lease
        while True:
            timing = Timing(self._clock(), self._config.lease, self._config.redeliver_after, delay)
            try:
                if record is not None:  # decided on the task as it is now: it may have turned back
                    task_now = self._item_runs.task_now(claimed)
                    outcome: Task | ItemRecord | Refusal = self._item_runs.commit(record, task_now, message, result,
                                                                                 timing)
                else:
                    outcome = mutate(
                        self._store, task_id,
                        lambda t: finish_attempt(t, message.DispatchId, self._config.owner, result, timing),
                        known=known,
                    )
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
                if self._clock() >= give_up:
                    log.error("could not record the outcome; the sweeper will re-run the step", error=str(exc))
                    return None
                time.sleep(STORE_RETRY_PAUSE)
                continue
            if isinstance(outcome, Refusal):
                log.warning("outcome refused", reason=outcome.reason)
                return None
            return outcome

    def _count_outcome(self, task: Task, message: StepMessage, labels: tuple[str, str, str]) -> None:
        again = (message.Cursor, message.Item, message.Type, message.Attempt + 1)
        if any((r.Cursor, r.Item, r.Phase, r.Attempt) == again for r in task.Runs):
            self._metrics.retries.labels(*labels).inc()
        if task.TaskStatus in FINAL_STATUSES:
            self._metrics.tasks_finished.labels(task.TaskType, task.TaskStatus.name).inc()

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

    def _parse(self, delivery: Delivery) -> StepMessage | None:
        """A message nobody can act on goes to the dead-letter queue, with an alarm; never a crash."""
        try:
            message = StepMessage.model_validate_json(delivery.body)
        except ValidationError as exc:
            # Name the fields and what is wrong, never the values: they may hold secrets.
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:5])
            return self._dead_letter(delivery, f"malformed step message: {problems}", task_id=named_task(delivery.body))
        if message.Module != self._config.module:
            return self._dead_letter(delivery, f"message for module {message.Module!r} on {self._config.module!r}'s queue", message)
        limit = self._config.delivery_limit
        count = int(getattr(delivery, "delivery_count", 0) or 0)
        if limit is not None and count >= limit:
            return self._dead_letter(delivery, f"poison message: handed out {count + 1} times without being settled", message)
        return message

    def _dead_letter(
        self, delivery: Delivery, reason: str, message: StepMessage | None = None, task_id: str | None = None
    ) -> None:
        delivery.dead_letter()
        self._metrics.dead_letters.labels(self._config.module).inc()
        task_id = message.TaskId if message else task_id
        log.error("message dead-lettered", reason=reason, module=self._config.module, task_id=task_id)
        alarm = Alarm(
            AlarmId=new_id(), Kind="dead_letter", Time=self._clock(), Message=reason,
            Module=self._config.module, TaskId=task_id,
            Cursor=message.Cursor if message else None, Phase=message.Type if message else None,
            Command=message.Command if message else None,
        )
        try:
            self._broker.publish(ALARM_QUEUE, alarm.model_dump_json().encode(), message_id=alarm.AlarmId)
        except BrokerError as exc:
            log.error("could not raise the dead-letter alarm", error=str(exc))
        return None

    def _crash_point(self, parameters: dict, message: StepMessage, point: str, delay: float = 0.0) -> None:
        """Injected crash (tests, drills): SIGKILL this module process at `point` of the protocol."""
        if not self._config.fault_injection:
            return
        try:
            faults = faults_for(parameters, message.Command, message.Type, message.Attempt)
        except BadFaultRule:
            return  # the command itself reports the bad rule as its failure
        if any(f.action == "crash" and f.at == point for f in faults):
            log.warning("injected crash", point=point)
            if delay:
                threading.Timer(delay, os.kill, (os.getpid(), signal.SIGKILL)).start()
            else:
                os.kill(os.getpid(), signal.SIGKILL)

    def _secrets(self, task: Task, record: ItemRecord | Refusal | None) -> list[str]:
        """The task's secret values: an item run of a step over records reads a task that stays
        the same for many items, whose parameters hold the whole list: worked out once."""
        return self._item_runs.reads.secrets(task) if isinstance(record, ItemRecord) else secret_values(task)

    def _timing(self) -> Timing:
        return Timing(self._clock(), self._config.lease, self._config.redeliver_after)
