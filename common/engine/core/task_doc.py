"""The task document (docs/design/task-document.md): one operation, its steps, the runs in flight,
the outbox of what its last change owes, and its history.

Field names follow the original spec (`TaskId`, `TaskCursor`, ...) so a stored document reads
against it; what the protocol adds (`State`, `Runs`, `Outbox`, `History`, `Version`, ...) is named
the same way. Times are UNIX epoch seconds (float, UTC): both stores compare and index them
alike, and the pure code takes "now" as a plain number.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

import pydantic_core
from pydantic import Field, ValidationError, model_validator

from common.engine.codes import OutboxKind, WaitKind
from common.engine.core import format_v1, step_summary
from common.engine.core.doc_base import Doc as _Doc
from common.engine.core.doc_base import OperatorRequest
from common.engine.core.declared import declared_parts, placed_parts
from common.engine.core.step_doc import Step
from common.engine.gates.after_task.fields import AfterTaskFields
from common.engine.gates.deadline.fields import DeadlineFields
from common.engine.gates.pause.fields import PauseFields
from common.engine.gates.start_at.fields import StartAtFields
from common.engine.kinds.for_each.fields import ForEachTaskFields
from common.engine.states import Phase as PhaseCode
from common.engine.states import RunState
from common.engine.states import TaskStatus as TaskStatusCode
from common.tracing.carrier import TraceContext

# The enums are imported under other names because fields such as `Phase` and `TaskStatus`
# (the spec's names) would shadow them inside the class bodies.


class RunCore(_Doc):
    """The fields every run has."""

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
    # PENDING, parked at the claim by a drained module (common/engine/gates/drain/gate.py): which one,
    # and since when; cleared by the first claim after its undrain.
    HeldBy: str | None = None
    HeldSince: float | None = None

    @property
    def unit(self) -> tuple[int, int | None]:
        return self.Cursor, self.Item


# Each plug-in's part of a run, found by folder (`RUN_PART` in its `fields.py`): a command's
# callback wait. Each is left out of a stored run while unset.
RUN_PARTS = declared_parts("common.engine.kinds", "RUN_PART") + declared_parts("common.engine.gates", "RUN_PART")


class Run(*RUN_PARTS, RunCore):  # type: ignore[misc]
    """One dispatched attempt of one phase of one unit. A task has any number at once, at most
    one per unit; none once it is final (docs/design/task-document.md, "Runs")."""


class ParentLink(_Doc):
    """A child task's link to the step of its parent that runs it."""

    TaskId: str
    Cursor: int
    Item: int | None = None


class OutboxEntry(_Doc):
    """What a committed change owes the broker or another task; removed once done.

    `Kind` (common.engine.codes.OutboxKind) says what `Body` holds: common.engine.outbox has a
    typed body per kind and the one table that says who flushes it (docs/design/outbox.md). A
    webhook's `Queue` is its target's Url ("" for the global webhook)."""

    DispatchId: str
    Kind: OutboxKind = OutboxKind.PUBLISH
    Queue: str = ""
    Body: dict[str, Any]
    Priority: int = 0
    DueAt: float  # publish at or after this time (a retry's backoff, a delayed start)


class NotifyTarget(_Doc):
    """Where a task's status changes are POSTed (docs/design/operations.md): `Url` None is the
    global webhook (BATON_WEBHOOK_URL, resolved by whoever delivers, so it is never stored)."""

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
    # outbox wake-up (common/engine/gates/after_task/waits.py). Kind "freeze": the window's end, when
    # the sweeper lets the task go (common/engine/gates/freeze/gate.py).
    RecheckAt: float | None = None
    Until: float | None = None  # Kind "freeze": when the window (named by `Key`) ends


# Each gate's (and kind's) part of the task document, last listed first in a stored document's fields.
# The first parts stand in the order stored documents have their fields: these listed by name,
# and those whose folder declares their place among them (`TASK_PART_PLACE`: a lock's); a gate
# added since declares its own part (`TASK_PART` in its `fields.py`: core/declared.py).
_FIRST = placed_parts(("common.engine.gates",), "TASK_PART",
                      (ForEachTaskFields, DeadlineFields, AfterTaskFields, StartAtFields, PauseFields))
TASK_PARTS = (*declared_parts("common.engine.gates", "TASK_PART", _FIRST), *_FIRST)


class TaskCore(_Doc):
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
    # The name of the API token that submitted it, kept only when a step needs it (an approval
    # its submitter may not give): None otherwise, and not written.
    SubmittedBy: str | None = Field(None, exclude_if=lambda name: name is None)
    Labels: dict[str, str] = Field(default_factory=dict)
    # Names of Parameters declared `secret: true` in flows.yaml: masked wherever a task is shown.
    SecretParameters: list[str] = Field(default_factory=list)
    # Set by a cancel while a step runs: its outcome, whatever it is, routes into rollback.
    CancelRequested: OperatorRequest | None = None
    Runs: list[Run] = Field(default_factory=list)
    Parent: ParentLink | None = None  # set on a sub-flow's child task
    Notify: list[NotifyTarget] = Field(default_factory=list)  # webhooks, copied at creation
    Outbox: list[OutboxEntry] = Field(default_factory=list)
    # The newest events; older ones moved to the task_history collection/table
    # (docs/design/stores.md, "Bounded documents"). Event n of the task (counting from 0) is
    # History[n - HistoryArchived] once n >= that.
    History: list[HistoryEvent] = Field(default_factory=list)
    HistoryArchived: int = 0
    Version: int = 0  # bumped by every compare-and-set
    # An operator's retry of a rolled-back task runs the flow again from step 0 as a new
    # generation, from the parameters it was submitted with (its rollback undid every step).
    Generation: int = 0
    SubmittedParameters: dict[str, Any] = Field(default_factory=dict)
    WaitingFor: WaitCondition | None = None  # set: routing starts nothing (a lock, another task)
    # The sweeper's two indexes, derived from Runs and Outbox whenever the task is serialised
    # (to_doc, to_json), so no transition can forget them; so is a for_each step's outcome.
    SweepAt: float | None = None
    OutboxDue: float | None = None
    # Its trace: the root span's W3C context (common/tracing/). Left out when there is none: a
    # process of the previous release forbids fields it does not know, and reads the task then.
    Trace: TraceContext | None = Field(None, exclude_if=lambda trace: trace is None)


class Task(*TASK_PARTS, TaskCore):  # type: ignore[misc]
    """The task document: the fields every task has (TaskCore), then each gate's part."""

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
            if step.Items:  # its outcome is its items' (common/engine/core/step_summary.py)
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

    def refresh_derived(self) -> None:
        """Its derived fields (the sweeper's indexes, a for_each step's outcome) as it is now, as
        to_doc and to_json write them: for a view built from the task itself."""
        self._refresh_derived()

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


# Which outbox entries the change that wrote a task added, by the task object (common.store.tasks.mutate
# notes them, a flush reads them: docs/design/outbox.md). Beside the task, not on it: it is no part
# of the document and must not make two equal documents compare unequal. Forgotten with the task.
_fresh_entries: dict[int, tuple[weakref.ref[Task], frozenset[tuple[str, float]]]] = {}


def _forget_fresh(key: int, ref: weakref.ref[Task]) -> None:
    noted = _fresh_entries.get(key)
    if noted is not None and noted[0] is ref:
        _fresh_entries.pop(key, None)


# Every transition is a pure function that begins with `new = task.clone()`, so a caller keeps
# its task intact. A task common.store.tasks.mutate has just read (or one the caller gave up) is held
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
    (common.store.tasks.mutate)."""

    Version: int
    TaskStatus: TaskStatusCode
    HistoryArchived: int
    history_count: int
    entries: frozenset[tuple[str, float]]  # the outbox's (DispatchId, DueAt)

    @classmethod
    def of(cls, task: Task) -> TaskBefore:
        entries = frozenset((e.DispatchId, e.DueAt) for e in task.Outbox)
        return cls(task.Version, task.TaskStatus, task.HistoryArchived, task.history_count, entries)
