"""The task document, the step message and the alarm, as pydantic models.

Field names follow the original spec (`TaskId`, `TaskCursor`, `Steps[].NormalModule`, ...) so a
stored document reads against it; what the protocol adds (`State`, `Runs`, `Outbox`, `History`,
`Version`, ...) is named the same way. docs/DESIGN.md sec. 2 explains every field. Times are UNIX epoch seconds (float, UTC): both stores
compare and index them alike, and the pure code takes "now" as a plain number.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from common.engine import format_v1, step_summary
from common.engine.codes import AlarmKind, OutboxKind, WaitKind
from common.engine.lock_docs import LockTemplate, TaskLock, UnitLock  # noqa: F401  (part of the document)
from common.engine.states import Phase as PhaseCode
from common.engine.states import LockState, ResultCode, RunState, StepState
from common.engine.states import TaskStatus as TaskStatusCode


# The enums are imported under other names because fields such as `Phase` and `TaskStatus`
# (the spec's names) would shadow them inside the class bodies.


class _Doc(BaseModel):
    # Documents we wrote ourselves: reject unknown fields so a typo never goes unnoticed; inf/nan
    # survive a JSON round trip (as Infinity/NaN) like they do through json.dumps.
    model_config = ConfigDict(extra="forbid", validate_assignment=False, ser_json_inf_nan="constants")


class BackoffPolicy(_Doc):
    """Delay before retry n (1-based): min(Max, Initial * Multiplier**(n-1)), +- Jitter fraction."""

    Initial: float = 1.0
    Max: float = 60.0
    Multiplier: float = 2.0
    Jitter: float = 0.2


class UnitState(_Doc):
    """The state of one unit (DESIGN.md 2.1): a plain step, or one item of a `for_each` step. The
    field names are the step's own, so code handling a unit needs not know which it is."""

    State: StepState = StepState.WAITING
    Code: ResultCode | None = None  # normal phase: how its last attempt ended
    Message: str = ""
    TimeStart: float | None = None
    TimeEnd: float | None = None
    Attempts: int = 0  # normal-phase attempts started
    RollbackCode: ResultCode | None = None
    RollbackMessage: str = ""
    RollbackTimeStart: float | None = None
    RollbackTimeEnd: float | None = None
    RollbackAttempts: int = 0
    # "Check again later" (DESIGN.md sec. 10): the command's latest progress message, and when
    # the current phase first answered "not done yet" (None while it is not waiting).
    Progress: str = ""
    WaitingSince: float | None = None
    # Verifies of an unknown outcome that answered "unknown" in each phase (DESIGN.md 13.1).
    Verifies: int = 0
    RollbackVerifies: int = 0


class StepItem(UnitState):
    """One item of a `for_each` step: its value (fixed when the step started), its own phase
    states, and its command's output."""

    Value: Any = None
    Output: dict[str, Any] = Field(default_factory=dict)
    ChildTaskId: str | None = None  # a for_each sub-flow step: this item's child task


class ChildTemplate(_Doc):
    """What a sub-flow step needs to create its child task without reading flows.yaml again:
    the child type's steps (copied when the parent was created), defaults and secrets."""

    TaskType: str
    Steps: list[Step]
    Defaults: dict[str, Any] = Field(default_factory=dict)
    SecretParameters: list[str] = Field(default_factory=list)
    Lock: LockTemplate | None = None  # the child type's own lock, keyed by the child's parameters
    FlowVersion: str | None = None  # the child type's flows.yaml `version:`
    FlowHash: str | None = None  # the child type's content hash (common/flows/versions.py)


class Step(UnitState):
    # A sub-flow step (Flow set) runs no command of its own: its Normal* fields are None.
    NormalModule: str | None = None
    NormalCommand: str | None = None
    NormalTimeout: float = 60.0
    NormalRetry: int = 0
    NormalBackoff: BackoffPolicy = Field(default_factory=BackoffPolicy)
    RollbackModule: str | None = None  # None: this step declares no rollback
    RollbackCommand: str | None = None
    RollbackTimeout: float | None = None
    RollbackRetry: int | None = None
    RollbackBackoff: BackoffPolicy = Field(default_factory=BackoffPolicy)
    # Added by baton:
    Name: str
    # The graph (DESIGN.md sec. 3): indices of the steps this one waits for. None only in a
    # template or an old document; Task fills it with "the step before".
    After: list[int] | None = None
    ForEach: str | None = None  # the list parameter this step fans out over
    MaxParallel: int | None = None  # items running at once (None: all)
    MaxItems: int | None = None  # the longest list it fans out over (None: the input limits only)
    MaxWait: float | None = None  # seconds a phase may keep answering "check again" (None: no bound)
    Items: list[StepItem] | None = None  # fixed when a for_each step starts (kept inline)
    # A for_each step whose items live in records of their own (DESIGN.md sec. 12): how many,
    # and whether any of them still has work in the step's current direction.
    ItemStore: str | None = None  # "records"; None: inline in Items
    ItemCount: int | None = None
    ItemsOpen: bool = False
    # The outbox entry of the operator's latest retry-rollback or compensate of the step's items:
    # a repeat of that entry leaves alone what it did, and what began after it (DESIGN.md 12.4).
    ItemsReopen: str | None = None
    Flow: str | None = None  # a sub-flow step: the child's task type
    FlowInputs: dict[str, str] = Field(default_factory=dict)  # child parameter -> parent's
    FlowTemplate: ChildTemplate | None = None
    ChildTaskId: str | None = None
    Lock: LockTemplate | None = None  # each unit's normal phase holds this key (common/engine/gates/step_locks.py)

    @property
    def has_rollback(self) -> bool:
        # A sub-flow step rolls back by rolling its child back.
        return self.RollbackModule is not None or self.Flow is not None

    def module(self, phase: PhaseCode) -> str:
        return self.NormalModule if phase is PhaseCode.NORMAL else self.RollbackModule  # type: ignore[return-value]

    def command(self, phase: PhaseCode) -> str:
        return self.NormalCommand if phase is PhaseCode.NORMAL else self.RollbackCommand  # type: ignore[return-value]

    def timeout(self, phase: PhaseCode) -> float:
        return self.NormalTimeout if phase is PhaseCode.NORMAL else self.RollbackTimeout  # type: ignore[return-value]

    def retry(self, phase: PhaseCode) -> int:
        return self.NormalRetry if phase is PhaseCode.NORMAL else self.RollbackRetry  # type: ignore[return-value]

    def backoff(self, phase: PhaseCode) -> BackoffPolicy:
        return self.NormalBackoff if phase is PhaseCode.NORMAL else self.RollbackBackoff


ChildTemplate.model_rebuild()


class Run(_Doc):
    """One dispatched attempt of one phase of one unit. A task has any number at once, at most
    one per unit; none once it is final (DESIGN.md 2.2)."""

    Cursor: int
    Item: int | None = None  # the item of a for_each step; None for a plain step
    Phase: PhaseCode
    Attempt: int  # 1-based, per unit and phase
    DispatchId: str  # fences stale deliveries: only the current dispatch may be claimed
    State: RunState = RunState.PENDING
    Owner: str | None = None  # worker id holding the claim
    # PENDING: when the sweeper re-publishes it; RUNNING: when the lease lapses;
    # WAITING_CHILD: None (the child task has runs and deadlines of its own).
    Deadline: float | None = None
    Redispatches: int = 0  # re-publications of this dispatch by the sweeper (its backoff)
    # When this run became due (its dispatch, or the end of its backoff or delayed start): how
    # long a step has waited for a module to claim it. None in documents written before it.
    Since: float | None = None
    # PENDING, parked at the claim by a drained module (common/engine/gates/drain.py): which one,
    # and since when; cleared by the first claim after its undrain.
    HeldBy: str | None = None
    HeldSince: float | None = None

    @property
    def unit(self) -> tuple[int, int | None]:
        return self.Cursor, self.Item


class ParentLink(_Doc):
    """A child task's link to the step of its parent that runs it."""

    TaskId: str
    Cursor: int
    Item: int | None = None


class OutboxEntry(_Doc):
    """What a committed change owes the broker or another task; removed once done.

    `Kind` (common.engine.codes.OutboxKind) says what `Body` holds: common.engine.outbox has a
    typed body per kind and the one table that says who flushes it (DESIGN.md 7.3). A webhook's
    `Queue` is its target's Url ("" for the global webhook)."""

    DispatchId: str
    Kind: OutboxKind = OutboxKind.PUBLISH
    Queue: str = ""
    Body: dict[str, Any]
    Priority: int = 0
    DueAt: float  # publish at or after this time (a retry's backoff, a delayed start)


class NotifyTarget(_Doc):
    """Where a task's status changes are POSTed (DESIGN.md sec. 10): `Url` None is the global
    webhook (BATON_WEBHOOK_URL, resolved by whoever delivers, so it is never stored)."""

    Url: str | None = None
    Events: list[str] = Field(default_factory=list)  # empty: every event


class HistoryEvent(_Doc):
    Time: float
    Event: str
    Cursor: int | None = None
    Item: int | None = None
    Phase: PhaseCode | None = None
    Attempt: int | None = None
    Actor: str | None = None  # worker id, "oss", "sweeper" or an operator's name
    Message: str = ""


class WaitCondition(_Doc):
    """Why a not-started task starts nothing yet. Kind "lock": `Key`; other kinds name what they
    wait for in the fields of their own (a task: `TaskId`)."""

    Kind: WaitKind
    Since: float
    Key: str | None = None
    TaskId: str | None = None
    # Kind "task": when the sweeper looks at the awaited task again, a safety net under the
    # outbox wake-up (common/engine/gates/task_waits.py). Kind "freeze": the window's end, when
    # the sweeper lets the task go (common/engine/gates/freeze.py).
    RecheckAt: float | None = None
    Until: float | None = None  # Kind "freeze": when the window (named by `Key`) ends


class OperatorRequest(_Doc):
    """An operator's request recorded on a task: who asked, why, and when."""

    Actor: str
    Reason: str
    Time: float


class Task(_Doc):
    TaskId: str
    TaskType: str
    TaskStatus: TaskStatusCode = TaskStatusCode.NOT_STARTED
    TaskMessage: str = ""
    TaskCursor: int = 0  # furthest step reached; stays put while rolling back
    TimeCreate: float
    TimeStart: float | None = None
    TimeEnd: float | None = None
    Parameters: dict[str, Any] = Field(default_factory=dict)
    Steps: list[Step]
    # Added by baton:
    # The revision of its task type it runs: flows.yaml's optional `version:`, and the content
    # hash of what it runs (common/flows/versions.py). None in documents written before.
    FlowVersion: str | None = None
    FlowHash: str | None = None
    IdempotencyKey: str | None = None
    Priority: int = 0
    UserId: str | None = None
    Labels: dict[str, str] = Field(default_factory=dict)
    # Names of Parameters declared `secret: true` in flows.yaml: masked wherever a task is shown.
    SecretParameters: list[str] = Field(default_factory=list)
    # Set by a cancel while a step runs: its outcome, whatever it is, routes into rollback.
    CancelRequested: OperatorRequest | None = None
    Runs: list[Run] = Field(default_factory=list)
    Parent: ParentLink | None = None  # set on a sub-flow's child task
    Notify: list[NotifyTarget] = Field(default_factory=list)  # webhooks, copied at creation
    Outbox: list[OutboxEntry] = Field(default_factory=list)
    # The newest events; older ones moved to the task_history collection/table (DESIGN.md 8.2).
    # Event n of the task (counting from 0) is History[n - HistoryArchived] once n >= that.
    History: list[HistoryEvent] = Field(default_factory=list)
    HistoryArchived: int = 0
    Version: int = 0  # bumped by every compare-and-set
    # An operator's retry of a rolled-back task runs the flow again from step 0 as a new
    # generation, from the parameters it was submitted with (its rollback undid every step).
    Generation: int = 0
    SubmittedParameters: dict[str, Any] = Field(default_factory=dict)
    Lock: TaskLock | None = None  # its task type declares a lock (DESIGN.md sec. 10)
    WaitingFor: WaitCondition | None = None  # set: routing starts nothing (a lock, another task)
    UnitLocks: list[UnitLock] = Field(default_factory=list)  # step locks waited for or held
    # The sweeper's two indexes, derived from Runs and Outbox whenever the task is serialised
    # (to_doc, to_json), so no transition can forget them; so is a for_each step's outcome.
    SweepAt: float | None = None
    OutboxDue: float | None = None
    # Operations (DESIGN.md sec. 10): no new unit starts while Paused or WaitingFor is set; past
    # Deadline (TimeCreate, or the delayed start, plus the type's `deadline`) the task rolls back.
    Paused: OperatorRequest | None = None
    # A delayed start (the submission's start_at): nothing starts before it, however the task
    # comes to dispatch (its creation, a resume after a pause, the end of a wait).
    StartAt: float | None = None
    # The submission's after_task, as the id it named: a repeat of the idempotency key must name
    # the same task (WaitingFor forgets it once that task ended).
    AfterTask: str | None = None
    AwaitedBy: list[str] = Field(default_factory=list)  # tasks whose WaitingFor names this one
    Deadline: float | None = None
    DeadlineSeconds: float | None = None

    # An `after` validator, not a `before` one: a `before` validator on the model makes pydantic
    # build the whole JSON document as Python objects first, and that doubled the cost of every
    # task read (118 -> 63 us for a 4.5 KB document): a tenth of a module's CPU per step.
    @model_validator(mode="after")
    def _fill_after(self) -> Task:
        """A step without `After` (format 1 documents, a template) waits for the one before it.
        Replaced, not edited: a Step given in may be shared (a flow's template)."""
        for index, step in enumerate(self.Steps):
            if step.After is None:
                self.Steps[index] = step.model_copy(update={"After": [index - 1] if index else []})
        return self

    def _refresh_derived(self) -> None:
        for step in self.Steps:
            if step.Items:  # its outcome is its items' (common/engine/step_summary.py)
                step_summary.apply(step, step.Items)
        deadlines = [r.Deadline for r in self.Runs if r.Deadline is not None]
        if self.TaskStatus in (TaskStatusCode.NOT_STARTED, TaskStatusCode.RUNNING):  # the sweeper ends it
            deadlines += [t for t in (self.Deadline, self.WaitingFor and self.WaitingFor.RecheckAt) if t is not None]
        self.SweepAt = min(deadlines) if deadlines else None
        self.OutboxDue = min(e.DueAt for e in self.Outbox) if self.Outbox else None

    @property
    def history_count(self) -> int:
        """How many events this task has had, archived ones included: a reader's cursor."""
        return self.HistoryArchived + len(self.History)

    def run(self, dispatch_id: str) -> Run | None:
        return next((r for r in self.Runs if r.DispatchId == dispatch_id), None)

    def to_doc(self) -> dict[str, Any]:
        self._refresh_derived()
        return self.model_dump(mode="json")

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Task:
        doc = {k: v for k, v in doc.items() if k != "_id"}
        return cls.model_validate(format_v1.upgraded(doc) if format_v1.is_format_1(doc) else doc)

    # The hot path of every step reads, copies and writes a task a few times: pydantic-core's
    # JSON and dict round trips are 2-4x faster than json + dicts, or deepcopy.
    def to_json(self) -> str:
        self._refresh_derived()
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> Task:
        try:
            return cls.model_validate_json(text)
        except ValidationError:
            try:  # a format 1 document fails only for its `Active` (an unknown field now)
                doc = pydantic_core.from_json(text, allow_inf_nan=True)
            except ValueError:
                doc = None
            if not format_v1.is_format_1(doc):
                raise
            return cls.model_validate(format_v1.upgraded(doc))

    def is_fresh(self, entry: OutboxEntry) -> bool:
        """Whether the change that wrote this task added `entry` (or moved its due time); True
        when not known (a task just created, read or copied)."""
        noted = _fresh_entries.get(id(self))
        if noted is None or noted[0]() is not self:
            return True
        return (entry.DispatchId, entry.DueAt) in noted[1]

    def mark_fresh(self, before: TaskBefore) -> None:
        """Remember which entries this task's outbox holds that `before`'s did not."""
        key = id(self)
        fresh = frozenset((e.DispatchId, e.DueAt) for e in self.Outbox) - before.entries
        _fresh_entries[key] = (weakref.ref(self, lambda ref: _forget_fresh(key, ref)), fresh)

    def clone(self) -> Task:
        """A deep copy, four times faster than model_copy(deep=True); or the task itself when
        it was lent to this thread's change (`lend_to_change`): nobody else holds it."""
        if getattr(_lent, "task", None) is self:
            _lent.task = None  # one clone only: a second copy inside the change is a real one
            return self
        return Task.model_validate(self.model_dump())


# Which outbox entries the change that wrote a task added, by the task object (common.store.mutate
# notes them, a flush reads them: DESIGN.md sec. 7.3). Beside the task, not on it: it is no part
# of the document and must not make two equal documents compare unequal. Forgotten with the task.
_fresh_entries: dict[int, tuple[weakref.ref[Task], frozenset[tuple[str, float]]]] = {}


def _forget_fresh(key: int, ref: weakref.ref[Task]) -> None:
    noted = _fresh_entries.get(key)
    if noted is not None and noted[0] is ref:
        _fresh_entries.pop(key, None)


# Every transition is a pure function that begins with `new = task.clone()`, so a caller keeps
# its task intact. A task common.store.mutate has just read (or one the caller gave up) is held
# by nobody else, and copying it is a tenth of a module's CPU per step: lent, its change edits it
# in place. Per thread, so another thread's clone of the same task is never affected.
_lent = threading.local()


def lend_to_change(task: Task | None) -> None:
    """Let the next `task.clone()` on this thread return `task` itself (None: take it back)."""
    _lent.task = task


@dataclass(frozen=True)
class TaskBefore:
    """What a write needs to know of the task as it was before a change that may have edited
    it in place: its version, its status, how many events it had, and its outbox entries
    (common.store.mutate)."""

    Version: int
    TaskStatus: TaskStatusCode
    HistoryArchived: int
    history_count: int
    entries: frozenset[tuple[str, float]]  # the outbox's (DispatchId, DueAt)

    @classmethod
    def of(cls, task: Task) -> TaskBefore:
        entries = frozenset((e.DispatchId, e.DueAt) for e in task.Outbox)
        return cls(task.Version, task.TaskStatus, task.HistoryArchived, task.history_count, entries)


class StepMessage(_Doc):
    """What travels on a module queue: "perform step Cursor of TaskId in phase Type".

    The store stays the source of truth; `DispatchId` and `Attempt` fence stale deliveries.
    """

    TaskId: str
    Cursor: int = Field(ge=0)
    Item: int | None = Field(None, ge=0)
    Type: PhaseCode
    # Written by baton in format 1 and ignored since: the claim reads the document's.
    Parameters: dict[str, Any] = Field(default_factory=dict)
    Module: str
    Command: str
    Timeout: float = Field(gt=0)
    Retry: int = Field(ge=0)
    DispatchId: str
    Attempt: int = Field(ge=1)


def named_task(body: bytes) -> str | None:
    """The TaskId a step message names, even when the rest of it cannot be parsed (nested too
    deep, a field of the wrong type): read from its first bytes only, as far as they parse (baton
    writes TaskId first; the shorter window stays under the parser's nesting limit)."""
    for window in (1024, 192):
        try:
            head = pydantic_core.from_json(body[:window], allow_partial=True)
        except ValueError:
            continue
        task_id = head.get("TaskId") if isinstance(head, dict) else None
        return task_id if isinstance(task_id, str) and 0 < len(task_id) <= 128 else None
    return None


class Alarm(_Doc):
    """A system alarm for an operator: a rollback that failed, or a message nobody could read."""

    AlarmId: str
    Kind: AlarmKind
    Time: float
    Message: str
    TaskId: str | None = None
    Cursor: int | None = None
    Phase: PhaseCode | None = None
    Module: str | None = None
    Command: str | None = None
    Acknowledged: bool = False
    AcknowledgedBy: str | None = None
    AcknowledgedAt: float | None = None
    AcknowledgedReason: str | None = None  # given with a bulk acknowledgement (the console's)
