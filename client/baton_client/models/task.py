"""A task as `GET /tasks/{id}` shows it (secrets masked): the document's fields, as baton names
them everywhere (TaskId, Steps[].NormalModule...), plus what the API derives (Attempts, Waiting).
Times are UNIX epoch seconds."""

from __future__ import annotations

from datetime import datetime, timezone
from enum import IntEnum
from typing import Any

from pydantic import Field

from baton_client.models._base import Answer


class TaskStatus(IntEnum):
    SUCCESS = 0  # every step succeeded
    NOT_STARTED = 1  # accepted, no step claimed yet (or waiting for its start, a lock, a task)
    RUNNING = 2
    ROLLING_BACK = 3  # a step failed (or a cancel): what ran is being undone
    ROLLED_BACK = 4  # failed or cancelled, and everything that ran was undone
    ROLLBACK_FAILED = 5  # a rollback step failed: an alarm is raised, an operator must act

    @property
    def final(self) -> bool:
        return self in FINAL_STATUSES


FINAL_STATUSES = frozenset({TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK, TaskStatus.ROLLBACK_FAILED})
# TaskDetail has a field named TaskStatus, which would shadow the class inside its body.
_Status = TaskStatus


class BackoffPolicy(Answer):
    """Delay before retry n: min(Max, Initial * Multiplier**(n-1)), spread by +-Jitter."""

    Initial: float = 1.0
    Max: float = 60.0
    Multiplier: float = 2.0
    Jitter: float = 0.2


class UnitState(Answer):
    """What a step and an item of a for_each step both have: state, outcome, times, attempts.
    `Code` and `RollbackCode`: 0 ok, 1 failed, 2 timed out, 3 worker lost, 4 process died,
    5 outcome unknown."""

    State: str = "waiting"
    Code: int | None = None
    Message: str = ""
    TimeStart: float | None = None
    TimeEnd: float | None = None
    Attempts: int = 0
    RollbackCode: int | None = None
    RollbackMessage: str = ""
    RollbackTimeStart: float | None = None
    RollbackTimeEnd: float | None = None
    RollbackAttempts: int = 0
    Progress: str = ""
    WaitingSince: float | None = None
    Verifies: int = 0
    RollbackVerifies: int = 0


class StepItem(UnitState):
    Value: Any = None
    Output: dict[str, Any] = Field(default_factory=dict)
    ChildTaskId: str | None = None


class Tolerance(Answer):
    """A for_each step's failure budget: `Count` items, or `Percent` of its items."""

    Count: int | None = None
    Percent: float | None = None


class HeldUnit(Answer):
    """The unit whose failure holds the task, and why."""

    Cursor: int
    Item: int | None = None
    Message: str = ""
    Time: float


class Decision(Answer):
    """One person's decision on an approval step."""

    Actor: str
    Decision: str
    Reason: str
    Time: float


class Step(UnitState):
    Kind: str = "command"  # command, for_each, sub_flow, or a kind added later
    NormalModule: str | None = None
    NormalCommand: str | None = None
    NormalTimeout: float = 60.0
    NormalRetry: int = 0
    NormalBackoff: BackoffPolicy = Field(default_factory=BackoffPolicy)
    RollbackModule: str | None = None
    RollbackCommand: str | None = None
    RollbackTimeout: float | None = None
    RollbackRetry: int | None = None
    RollbackBackoff: BackoffPolicy = Field(default_factory=BackoffPolicy)
    Name: str
    After: list[int] | None = None
    ForEach: str | None = None
    MaxParallel: int | None = None
    MaxItems: int | None = None
    MaxWait: float | None = None
    Items: list[StepItem] | None = None
    ItemStore: str | None = None
    ItemCount: int | None = None
    ItemsOpen: bool = False
    ItemsReopen: str | None = None
    Tolerate: Tolerance | None = None  # a for_each step's failure budget
    OnFailure: str | None = None  # "hold": a failure past the budget holds the task; None: it rolls back
    FailedItems: int | None = None  # how many of its items failed within that budget, once it succeeded
    ToleratedItems: list[int] | None = None  # the items that took a place in that budget, in the order they took it
    Source: dict[str, Any] | None = None  # its items from a module's command: Module, Command, PageSize
    Paging: dict[str, Any] | None = None  # how far that source's paging got: Page, After, Fetched, Total, Done, Failed
    Waves: list[dict[str, Any]] | None = None  # its waves as flows.yaml gave them: Size, Bake, Check, Pause, Tolerate
    Wave: dict[str, Any] | None = None  # where it stands in them: Ends, Index, Phase, Until, Tallies, Check
    Flow: str | None = None
    FlowInputs: dict[str, str] = Field(default_factory=dict)
    FlowTemplate: ChildTemplate | None = None
    ChildTaskId: str | None = None
    Lock: dict[str, Any] | None = None
    Rate: dict[str, Any] | None = None  # its own rate: Key, Limit, Per
    Approve: dict[str, Any] | None = None  # an approval step's rule
    Decisions: list[Decision] = Field(default_factory=list)  # an approval step's decisions
    Callbacks: list[dict[str, Any]] = Field(default_factory=list)  # its callback tokens spent: Attempt, Ended, Time


class StepAction(Answer):
    """An action a step offers while it waits for people."""

    Name: str
    Label: str
    Summary: str = ""


class StepShown(Answer):
    """A step as its kind describes it: what the console's graph and `baton get` show."""

    Kind: str
    State: str | None = None  # how its state reads for its kind: "rejected" (an approval step)
    Note: str = ""
    Total: int | None = None
    Done: int | None = None
    Child: str | None = None
    Children: list[str] = Field(default_factory=list)
    Actions: list[StepAction] = Field(default_factory=list)


class StepDetail(Step):
    ItemCounts: dict[str, int] | None = Field(None, description="A for_each step that started: items per state")
    Shown: StepShown | None = None


class ChildTemplate(Answer):
    """A sub-flow step's child task type, as the parent recorded it."""

    TaskType: str
    Steps: list[Step]
    Defaults: dict[str, Any] = Field(default_factory=dict)
    SecretParameters: list[str] = Field(default_factory=list)
    Lock: dict[str, Any] | None = None
    Rate: dict[str, Any] | None = None  # the child type's rate
    FlowVersion: str | None = None
    FlowHash: str | None = None


class Run(Answer):
    """One dispatched attempt of one phase (0 normal, 1 rollback) of one unit."""

    Cursor: int
    Item: int | None = None
    Phase: int
    Attempt: int
    DispatchId: str
    State: str = "pending"
    Owner: str | None = None
    Deadline: float | None = None
    Redispatches: int = 0
    Since: float | None = None
    HeldBy: str | None = None
    HeldSince: float | None = None
    Callback: dict[str, Any] | None = None  # its command waits for a callback: Hash, Until, Heartbeat, Beat


class ParentLink(Answer):
    TaskId: str
    Cursor: int
    Item: int | None = None


class OutboxEntry(Answer):
    DispatchId: str
    Kind: str = "publish"
    Queue: str = ""
    Body: dict[str, Any]
    Priority: int = 0
    DueAt: float


class NotifyTarget(Answer):
    Url: str | None = None
    Events: list[str] = Field(default_factory=list)


class HistoryEvent(Answer):
    """One change of the task: `Event` (claimed, step_succeeded, cancelled...), who and when."""

    Time: float
    Event: str
    Cursor: int | None = None
    Item: int | None = None
    Phase: int | None = None
    Attempt: int | None = None
    Actor: str | None = None
    Message: str = ""


class WaitCondition(Answer):
    """What the task waits for: `Kind` lock (`Key`), task (`TaskId`), freeze (`Key`, `Until`),
    drain (`Key`: the module) or start_at (`Until`: its delayed start)."""

    Kind: str
    Since: float
    Key: str | None = None
    TaskId: str | None = None
    RecheckAt: float | None = None
    Until: float | None = None


class WaitWord(Answer):
    """One word of a wait as people read it: `Kind` text, strong (a name), time (epoch seconds) or
    task (another task's id)."""

    Kind: str
    Value: str | float | None = None


class ShownWait(Answer):
    """What the task waits for as its gate says it (the console's "Waiting for" line): the same
    for every gate, a new one's too."""

    Kind: str
    Words: list[WaitWord] = Field(default_factory=list)
    Style: str = ""

    @property
    def text(self) -> str:
        """The words as one line, a time in UTC ("freeze window maintenance to end at 2026-01-05 06:00:00Z")."""
        return "".join(_word_text(word) for word in self.Words)


def _word_text(word: WaitWord) -> str:
    if word.Kind == "time" and isinstance(word.Value, (int, float)):
        return datetime.fromtimestamp(word.Value, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    return "" if word.Value is None else str(word.Value)


class TraceContext(Answer):
    """The task's trace: the W3C traceparent and tracestate of its root span (docs/guide/tracing.md)."""

    TraceParent: str
    TraceState: str = ""
    Link: str | None = None


class OperatorRequest(Answer):
    Actor: str
    Reason: str
    Time: float


class AttemptView(Answer):
    """One attempt of one step phase, from the history (the document keeps only the last)."""

    Run: int
    Cursor: int
    Item: int | None = None
    Phase: int
    Attempt: int
    Worker: str | None
    TimeStart: float
    TimeEnd: float | None
    Outcome: str
    Message: str


class TaskDetail(Answer):
    TaskId: str
    TaskType: str
    TaskStatus: _Status = _Status.NOT_STARTED
    TaskMessage: str = ""
    TaskCursor: int = 0
    TimeCreate: float
    TimeStart: float | None = None
    TimeEnd: float | None = None
    Parameters: dict[str, Any] = Field(default_factory=dict)
    Steps: list[StepDetail]
    FlowVersion: str | None = None
    FlowHash: str | None = None
    IdempotencyKey: str | None = None
    Priority: int = 0
    UserId: str | None = None
    SubmittedBy: str | None = None
    Labels: dict[str, str] = Field(default_factory=dict)
    SecretParameters: list[str] = Field(default_factory=list)
    CancelRequested: OperatorRequest | None = None
    Runs: list[Run] = Field(default_factory=list)
    Parent: ParentLink | None = None
    Notify: list[NotifyTarget] = Field(default_factory=list)
    Outbox: list[OutboxEntry] = Field(default_factory=list)
    History: list[HistoryEvent] = Field(default_factory=list)
    HistoryArchived: int = 0
    Version: int = 0
    Generation: int = 0
    SubmittedParameters: dict[str, Any] = Field(default_factory=dict)
    Lock: dict[str, Any] | None = None
    Rate: dict[str, Any] | None = None  # its task type's rate: Key, Limit, Per, State, Since, NextAt
    WaitingFor: WaitCondition | None = None
    UnitLocks: list[dict[str, Any]] = Field(default_factory=list)
    Trace: TraceContext | None = None
    SweepAt: float | None = None
    OutboxDue: float | None = None
    Paused: OperatorRequest | None = None
    StartAt: float | None = None
    AfterTask: str | None = None
    AwaitedBy: list[str] = Field(default_factory=list)
    Deadline: float | None = None
    DeadlineSeconds: float | None = None
    FailedItems: int | None = None  # succeeded with this many items failed within their steps' budgets
    Held: HeldUnit | None = None  # a failure holds it for an operator's redrive or rollback
    ScheduledFor: float | None = None
    Attempts: list[AttemptView] = Field(default_factory=list)
    TaskStatusName: str = ""
    Waiting: str | None = None
    WaitShown: ShownWait | None = None  # what it waits for, in its gate's words
    RunWaits: dict[str, str] = Field(default_factory=dict)  # what a run in a plug-in's state waits for, by DispatchId
    ItemRuns: list[Run] = Field(default_factory=list)  # the runs in flight of items kept in records

    @property
    def ended(self) -> bool:
        """Final, and owing nothing more to the engine (a parent to tell, a lock to give back);
        a webhook still waiting for its receiver does not count, as for the event stream's end."""
        return self.TaskStatus.final and all(entry.Kind == "webhook" for entry in self.Outbox)


Step.model_rebuild()
StepDetail.model_rebuild()
