"""Creating and reading tasks: what the CLI (and later the REST API) call."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from common.broker.port import Broker
from common.errors import DuplicateTask, Frozen, IdempotencyConflict, InvalidInput, InvalidParameters
from common.flows import FlowCatalog
from common.flows.catalog import FlowDefinition
from common.flows.freeze import FreezePolicy, freeze_for
from common.engine.views import (
    LockAsk, LockKeyError, LockKeyTooLong, render_key, template_fields, unit_secrets, utc_text,
)
from common.input_limits import check_input
from common.reserved import reserved_problems
from common.engine.document import NotifyTarget, Task
from common.engine.changes import Timing, add_notifications, create_task
from common.relay.outbox import OutboxPublisher, mark_delay_for
from common.queues import ALARM_QUEUE, module_queue
from common.settings import Settings
from common.store.items.port import ItemStore
from common.store.tasks.port import TaskStore
from common.tracing import task_spans
from common.tracing.carrier import TraceContext
from oss.services.actions import OperatorActions
from oss.services.callbacks import Callbacks
from oss.services.idempotency import differences
from oss.services.task_waits import TaskWaits

log = structlog.get_logger(__name__)
# The request's names, ids and keys: no control character in any of them.
IDENTIFIERS = ("task_type", "idempotency_key", "user_id", "labels", "after_task")


@dataclass(frozen=True)
class SubmitOptions:
    """What a submission may say besides its task type and parameters: the keywords
    TaskService.submit and TaskService.draft take (an unknown one is a TypeError)."""

    idempotency_key: str | None = None
    priority: int = 0
    start_at: float | None = None
    user_id: str | None = None
    labels: Mapping[str, str] | None = None
    after_task: str | None = None
    submitted_by: str | None = None  # the API token's name that submits it
    # Baton's own submission (a schedule's tick): it may use the names baton reserves
    # (common.reserved); every client's is refused them.
    by_baton: bool = False
    trace: TraceContext | None = None  # the trace the task joins (its submission's span)


@dataclass(frozen=True)
class Submission:
    task: Task
    created: bool  # False: the idempotency key named a task that already existed


@dataclass(frozen=True)
class Draft:
    """A submission checked and built but not written (TaskService.draft)."""

    task: Task  # the new task as it would be inserted; the existing one on a repeat
    request: tuple[Any, ...]  # what an idempotency repeat is compared on
    existing: Task | None  # the task an earlier request with the same idempotency key created
    awaited: Task | None  # the task `after_task` named


class TaskService:
    def __init__(
        self,
        store: TaskStore,
        broker: Broker,
        flows: FlowCatalog,
        settings: Settings,
        clock: Callable[[], float] = time.time,
    ):
        self._store = store
        self._flows = flows
        self._settings = settings
        self._clock = clock
        self._publisher = OutboxPublisher(
            store, broker, clock, mark_delay_for(settings.relay_grace_seconds),
            lease=settings.lease_seconds, redeliver_after=settings.redeliver_after_seconds,
        )
        self._broker = broker
        self._waits = TaskWaits(store, self._publisher, lambda: Timing(clock(), redeliver_after=settings.redeliver_after_seconds))
        self.actions = OperatorActions(
            store, self._publisher, clock, settings.redeliver_after_seconds, settings.input_limits
        )
        self.callbacks = Callbacks(store, self._publisher, clock, settings.redeliver_after_seconds, settings.input_limits)

    @property
    def items(self) -> ItemStore:
        """The item records beside the task store (the outbox publisher's)."""
        return self._publisher.item_store

    def declare_queues(self) -> None:
        """Every module queue the flows name, and the alarm queue: publishes need somewhere to go."""
        for queue in sorted({module_queue(m) for m in self._flows.modules()} | {ALARM_QUEUE}):
            self._broker.declare(queue)

    def submit(self, task_type: str, parameters: Mapping[str, Any], **options: Any) -> Submission:
        """Write the whole task (step 0's dispatch in its outbox) in one insert, then publish it.
        `options`: SubmitOptions' fields.

        Parameters are checked against the task type's schema first (InvalidParameters; nothing
        is written) and its defaults filled in. A publish that fails here is not an error for
        the caller: the task is stored and the outbox relay publishes step 0 within seconds.
        """
        with task_spans.submission(task_type) as span:  # the task's trace starts here
            submission = self._submit(task_type, parameters, span.trace, **options)
            span.created(submission.task.TaskId, submission.created, submission.task.Trace)
            return submission

    def _submit(self, task_type: str, parameters: Mapping[str, Any], trace: TraceContext | None,
                **options: Any) -> Submission:  # fmt: skip
        draft = self.draft(task_type, parameters, trace=trace, **options)
        if draft.existing is not None:
            return Submission(draft.existing, created=False)
        task = draft.task
        try:
            self._store.insert(task)
        except DuplicateTask:
            # Lost a race with a concurrent submission of the same key: answer with the winner.
            key = task.IdempotencyKey
            existing = self._store.get_by_idempotency_key(key) if key else None
            if existing is None:
                raise
            return _repeat(existing, *draft.request, task.AfterTask)
        self._publisher.flush(task)  # before the log line: the first step starts sooner
        log.info("task created", task_id=task.TaskId, task_type=task_type)
        if draft.awaited is not None:
            task = self._waits.listen(task, draft.awaited.TaskId)
        return Submission(task, created=True)

    def draft(self, task_type: str, parameters: Mapping[str, Any], **options: Any) -> Draft:
        """Everything a submission checks and builds, and nothing it writes: the task as it would
        be inserted (its first dispatches in its outbox), or the task an earlier request with the
        same idempotency key created. Raises what `submit` raises for a request it refuses.
        `options`: SubmitOptions' fields."""
        given = SubmitOptions(**options)
        # Baton's own limits first: nothing past this line (the schema check, its messages, the
        # store) ever sees a value too deep, too big, not valid Unicode or with a control character.
        check_input(self._settings.input_limits, IDENTIFIERS, task_type=task_type, parameters=dict(parameters),
                    idempotency_key=given.idempotency_key, user_id=given.user_id, labels=dict(given.labels or {}),
                    after_task=given.after_task)  # fmt: skip
        if not given.by_baton and (taken := reserved_problems(given.idempotency_key, given.labels)):
            raise InvalidInput(taken)
        flow = self._flows.get(task_type)
        check = flow.validate(parameters)
        if not check.ok:
            raise InvalidParameters([(e.path, e.message) for e in check.errors])
        labels = dict(given.labels or {})
        request = (task_type, check.parameters, given.priority, given.user_id, labels, given.start_at)
        if given.idempotency_key is not None:
            existing = self._store.get_by_idempotency_key(given.idempotency_key)
            if existing is not None:
                repeat = _repeat(existing, *request, self._named(given.after_task, existing))
                return Draft(existing, request, existing=repeat.task, awaited=None)
        awaited = self._waits.awaited(given.after_task) if given.after_task is not None else None
        lock = _lock_of(flow, check.parameters)
        asks = _asks_of(flow, check.parameters)  # each gate's key on the task type (its rate)
        _check_step_lock_keys(flow, check.parameters)
        now = self._clock()
        task = create_task(
            freeze=_freeze(self._flows, task_type, now),
            lock=lock,
            **asks,
            task_type=task_type,
            steps=flow.new_steps(),
            own_steps=True,
            parameters=check.parameters,
            secret_parameters=flow.secret_parameters,
            timing=Timing(now, redeliver_after=self._settings.redeliver_after_seconds),
            start_at=given.start_at,
            idempotency_key=given.idempotency_key,
            priority=given.priority,
            user_id=given.user_id,
            labels=labels,
            deadline_seconds=flow.deadline,
            after_task=awaited.TaskId if awaited is not None else None,
            flow_version=flow.version,
            flow_hash=flow.content_hash,
            trace=given.trace,
            submitted_by=given.submitted_by,
        )
        task.Notify = notify_targets(flow.notify, self._settings)
        add_notifications(None, task)  # "created", in the insert itself
        return Draft(task, request, existing=None, awaited=awaited)

    def _named(self, after_task: str | None, existing: Task) -> str | None:
        """The id of the task a repeat's after_task names (itself when it names none)."""
        if after_task is None or after_task == existing.AfterTask:
            return after_task
        found = self._store.get(after_task) or self._store.get_by_idempotency_key(after_task)
        return found.TaskId if found is not None else after_task

    def get(self, task_id: str) -> Task | None:
        return self._store.get(task_id)

    def close(self) -> None:
        self._publisher.stop()


def notify_targets(of_type: tuple[NotifyTarget, ...], settings: Settings) -> list[NotifyTarget]:
    """The task type's webhook (flows.yaml `notify`) and the global one (BATON_WEBHOOK_URL, kept
    out of the document: the deliverer resolves Url None), copied into the task at creation."""
    targets = [t.model_copy() for t in of_type]
    if settings.webhook_url is not None:
        targets.append(NotifyTarget(Url=None, Events=settings.webhook_event_names))
    return targets


def _lock_of(flow: FlowDefinition, parameters: dict[str, Any]) -> LockAsk | None:
    """The task type's lock keyed by these parameters."""
    return _keyed(lambda: flow.lock_ask(parameters), flow.lock_parameters, parameters, "lock")


def _asks_of(flow: FlowDefinition, parameters: dict[str, Any]) -> dict[str, Any]:
    """What the task type's keys of the gates (its rate) ask, keyed by these parameters."""
    return {key: _keyed(lambda: flow.ask(key, parameters), flow.key_parameters(key), parameters, key)
            for key in flow.templates}


def _keyed(ask: Callable[[], Any], names: Iterable[str], parameters: dict[str, Any], what: str) -> Any:
    """A key made of parameters: one naming a parameter not given, or too long, is refused
    naming the parameter."""
    try:
        return ask()
    except LockKeyTooLong as exc:
        longest = max(names, key=lambda n: len(str(parameters.get(n, ""))))
        raise InvalidParameters([(f"parameters.{longest}", f"makes the task type's {what} key too long: {exc}")]) from exc
    except LockKeyError as exc:
        missing = [n for n in names if n not in parameters]
        raise InvalidParameters([(f"parameters.{missing[0]}", f"required by the task type's {what} key: {exc}")]) from exc


def _check_step_lock_keys(flow: FlowDefinition, parameters: dict[str, Any]) -> None:
    """A step lock's key the submission already makes (from its parameters, or an item of a list
    it gives) is refused when too long, naming the parameter (or the item): GET /locks?key= takes
    none longer. A key made of a step's output is known only when it runs."""
    for step in flow.steps:
        if step.Lock is None:
            continue
        secret = unit_secrets(flow.secret_parameters, step.ForEach)
        fields = template_fields(step.Lock.Key)
        items = parameters.get(step.ForEach) if step.ForEach and "item" in fields else None
        units = [(f"parameters.{step.ForEach}[{i}]", {**parameters, "item": v, "item_index": i})
                 for i, v in enumerate(items)] if isinstance(items, list) else [("parameters", parameters)]  # fmt: skip
        for where, values in units:
            try:
                render_key(step.Lock.Key, values, secret)
            except LockKeyTooLong as exc:
                named = [n for n in fields if n in parameters]
                path = where if where != "parameters" or not named else f"parameters.{max(named, key=lambda n: len(str(parameters[n])))}"
                raise InvalidParameters([(path, f"makes step {step.Name}'s lock key too long: {exc}")]) from exc
            except LockKeyError:
                break  # keyed by an output of an earlier step


def _freeze(flows: FlowCatalog, task_type: str, now: float) -> tuple[str, float] | None:
    """The freeze window a new task waits for (window name, its end), or None; raises Frozen
    when an open window refuses the type (common/flows/freeze.py)."""
    found = freeze_for(flows.freezes, task_type, now)
    if found is None:
        return None
    if found.window.policy is FreezePolicy.REFUSE:
        raise Frozen(task_type, found.window.name, found.until, utc_text(found.until))
    return found.window.name, found.until


def _repeat(existing: Task, *request: Any) -> Submission:
    """The task a repeated idempotency key created, or IdempotencyConflict if the request differs."""
    differ = differences(existing, *request)
    if differ:
        raise IdempotencyConflict(existing.TaskId, differ)
    return Submission(existing, created=False)
