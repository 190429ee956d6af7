"""What the API takes and answers, as pydantic models (they make the OpenAPI document).

Request and envelope fields are snake_case; a task itself keeps the document's field names
(TaskId, TaskStatus, Steps[].NormalModule...), the same everywhere baton shows a task.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StringConstraints, WithJsonSchema

from common.labels import LABEL_KEY
from common.input_limits import FREE_TEXT_PATTERN, FREE_TEXT_PROBLEM, NO_CONTROL_PATTERN, free_text_problems
from common.engine.document import Alarm, BackoffPolicy, OperatorRequest, Run, Step, Task, TaskLock, WaitCondition
from common.reserved import RESERVED_KEY_SCHEMA, RESERVED_LABEL_SCHEMA
from common.engine.states import TaskStatus
from oss.api.attempts import AttemptView
from oss.services.times import MOMENT_SCHEMA, to_epoch

# Label keys are plain names (a dot would be a path to MongoDB); values short free text.
LabelKey = Annotated[str, StringConstraints(pattern=rf"^{LABEL_KEY}$")]
LabelValue = Annotated[str, StringConstraints(max_length=256, pattern=NO_CONTROL_PATTERN)]
# A name, an id or a key: no control character (common.input_limits).
Identifier = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=NO_CONTROL_PATTERN)]
MAX_LABELS = 32


def _json_number(value: Any) -> Any:
    """Only a JSON number: pydantic would read true as 1 and "2" as 2, which the schema refuses."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("must be a number")
    return value


# An integer as JSON Schema has it: 3 and 3.0, never true or "3".
JsonInt = Annotated[int, BeforeValidator(_json_number)]
# What a status filter takes, published as an enum: a code, or a name in upper or lower case.
StatusFilter = Enum(  # type: ignore[misc]
    "StatusFilter", {form: form for s in TaskStatus for form in (str(s.value), s.name, s.name.lower())}, type=str
)
# A mapping's keys off its key pattern are refused: say so in the schema (pydantic leaves it out).
NO_OTHER_KEYS = {"additionalProperties": False}


def at_least_one_of(*names: str) -> dict[str, Any]:
    """JSON Schema for "give at least one of these fields, not null, a mapping or list not empty"."""
    given: dict[str, Any] = {"not": {"type": "null"}, "minProperties": 1, "minItems": 1}
    return {"anyOf": [{"required": [name], "properties": {name: given}} for name in names]}


# A time as clients write it, epoch seconds once validated; the schema says exactly what it takes.
Moment = Annotated[float, BeforeValidator(to_epoch), WithJsonSchema(MOMENT_SCHEMA)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateTask(_Request):
    task_type: str = Field(min_length=1, max_length=128, pattern=NO_CONTROL_PATTERN, examples=["create_mysql_instance"])
    parameters: dict[str, Any] = Field(default_factory=dict, examples=[{"name": "app_db", "cpu": 2}])
    idempotency_key: Identifier | None = Field(
        None, json_schema_extra=RESERVED_KEY_SCHEMA,
        description="A business id: the same key answers the same task (200) instead of a new one. Not "
        '"schedule:..." nor a sub-flow child\'s task id ("<id>.<step>"): baton keeps those for itself.',
    )  # fmt: skip
    priority: JsonInt = Field(0, ge=0, le=4, description="0 (default) to 4: higher runs first")
    start_at: Moment | None = Field(None, description="Delayed start: ISO-8601 (no zone means UTC) or UNIX epoch seconds.")
    user_id: Identifier | None = Field(None, description="Owner")
    after_task: Identifier | None = Field(
        None, description="Start only once this task (its id or idempotency key) succeeded; if it fails, this one never starts.",
    )  # fmt: skip
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict, max_length=MAX_LABELS, description="Not `schedule`: baton labels a schedule's tasks with it",
        json_schema_extra={**NO_OTHER_KEYS, **RESERVED_LABEL_SCHEMA},
    )  # fmt: skip
    dry_run: StrictBool = Field(
        False, description="Create nothing: answer 200 with the plan of what the task would do (its graph, "
        "locks and their holders, the modules that would serve it, when it would start)",
    )  # fmt: skip


# A character that is not whitespace to str.strip(), spelled out so that the published pattern
# means the same to every regex engine (Unicode's White_Space and Python's differ on \x1c-\x1f).
NOT_BLANK = "[^\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


def _said_why(value: str) -> str:
    if re.search(NOT_BLANK, value) is None:
        raise ValueError("must say why")
    if free_text_problems(value, "reason"):
        raise ValueError(FREE_TEXT_PROBLEM)
    return value.strip()


# Why an operator acts: recorded with the operator's name wherever the action is. Text, not
# blank, with no control character but tab and newline and nothing invisible (common.input_limits).
Reason = Annotated[
    str, StringConstraints(min_length=1, max_length=2000), AfterValidator(_said_why),
    Field(json_schema_extra={"pattern": NOT_BLANK, "allOf": [{"pattern": FREE_TEXT_PATTERN}]}),
]  # fmt: skip


def _cancel_only(value: bool) -> bool:
    if value:
        raise ValueError("applies to cancel only")
    return value


class OperatorAction(_Request):
    """The body of retry, retry-rollback and compensate."""

    reason: Reason = Field(description="Recorded in the history")
    stop_running: Annotated[StrictBool, AfterValidator(_cancel_only)] = Field(
        False, description="cancel only: false here", json_schema_extra={"enum": [False]}
    )


class StepActionBody(_Request):
    """The body of a step's action (approve, reject): why, recorded in the history."""

    reason: Reason = Field(description="Recorded in the history, with who and when")


class CancelAction(_Request):
    """A cancel's body: it alone may stop claimed runs (the schema says so, per action)."""

    reason: Reason = Field(description="Recorded in the history")
    stop_running: StrictBool = Field(
        False, description="Stop claimed runs now (they count as failed and are rolled back) "
        "instead of letting them finish",
    )


class SkipAction(_Request):
    """A skip's body: which unit (a step, or one item of a for_each step) the flow passes as done."""

    reason: Reason = Field(description="Recorded in the history")
    step: JsonInt = Field(ge=0, le=10_000, description="The step's index (Steps[i])")
    # The bounds before the validator: after it, pydantic publishes them as "ge"/"le", not JSON Schema.
    item: Annotated[int, Field(ge=0, le=1_000_000), BeforeValidator(_json_number)] | None = Field(
        None, description="A for_each step's item (running task only)")


SCHEDULED_FOR = "Delayed start not reached yet: when step 0 is due (epoch s); else null"


class StepActionView(BaseModel):
    """An action a step's kind offers people while the step waits for them."""

    Name: str = Field(description="As the route and `baton act` spell it")
    Label: str = Field(description="What a button says")
    Summary: str = Field("", description="What it does")


class StepShownView(BaseModel):
    """A step as its kind describes it, the same for every kind: what the console's graph and
    `baton get` show beside its name and state."""

    Kind: str = Field(description="command, for_each, sub_flow, or a kind added later")
    State: str | None = Field(None, description="How the step's state reads for its kind where `State` says less "
                              "(the surfaces show it instead): `rejected` for an approval step a person or its "
                              "timeout rejected (stored `failed`, then `skipped` once the rollback passed it)")
    Note: str = Field("", description='What it does, in one line: "mysql · create_db", "for_each hosts: 3/5"')
    Total: int | None = Field(None, description="A step with items: how many, once fixed")
    Done: int | None = Field(None, description="Of its items, how many succeeded")
    Child: str | None = Field(None, description="The child task it runs")
    Children: list[str] = Field(default_factory=list, description="The child tasks its items run")
    Actions: list[StepActionView] = Field(
        default_factory=list, description="What people may do to the step now (approve, reject): "
        "POST /api/v1/tasks/{id}/steps/{step}/actions/{action} with a reason")


class WaitWordView(BaseModel):
    """One word of a wait as people read it."""

    Kind: Literal["text", "strong", "time", "task"] = Field(
        description="text; strong (a name to stand out); time (epoch seconds, shown in the reader's zone); "
        "task (another task's id, a link)")
    Value: str | float | None = Field(description="The text, the name, the time or the task id")


class WaitShownView(BaseModel):
    """What the task waits for as its gate says it, beside "Waiting for": the same words on every
    surface, so a wait of a new gate needs no code of its own there."""

    Kind: str = Field(description="As `WaitingFor.Kind`")
    Words: list[WaitWordView] = Field(description="In reading order")
    Style: str = Field("", description="A name the console styles the line by (frozen, drained), or empty")


class StepDetail(Step):
    """A step as shown: a for_each step that started adds its items' counts by state, and every
    step how its kind describes it."""

    ItemCounts: dict[str, int] | None = Field(
        None, description="A for_each step that started: how many of its items are in each state "
        "(states with none left out); its items are paged at /tasks/{id}/steps/{step}/items")
    Shown: StepShownView | None = Field(None, description="The step as its kind describes it")


class TaskDetail(Task):
    """The task document as shown (secrets masked), plus what the API derives from it. A
    for_each step over item records shows `ItemCount` and `ItemCounts`, never its items."""

    Steps: list[StepDetail]  # type: ignore[assignment]

    ScheduledFor: float | None = Field(None, description=SCHEDULED_FOR)
    Attempts: list[AttemptView] = Field(
        default_factory=list,
        description="Every attempt of every step phase, from the history: the document keeps only the last",
    )
    TaskStatusName: str = Field("", description="The status's name beside its code, as in the list's items")
    Waiting: str | None = Field(
        None, description='Why its step is not taken, e.g. "no live module serves queue dnz"; null: nothing to say'
    )
    RunWaits: dict[str, str] = Field(
        default_factory=dict, description="Of its runs and `ItemRuns` that wait in a state of their step's kind or "
        "of a gate (a child task, the step's lock, a drained module), what each waits for, by `DispatchId`")
    WaitShown: WaitShownView | None = Field(
        None, description="What it waits for (`WaitingFor`, a drained module's hold too) as its gate says it; "
        "null: it waits for nothing")
    ItemRuns: list[Run] = Field(
        default_factory=list,
        description="The runs in flight of the items of steps over records (their first ones, by item index, "
        "up to 50 a step): `Runs` holds the task's own",
    )


class ItemView(BaseModel):
    """One item of a for_each step, secrets masked: its index, value, state and output."""

    model_config = ConfigDict(extra="allow")
    Item: int
    State: str
    Value: Any = None
    Output: dict[str, Any] = Field(default_factory=dict)


class ItemPage(BaseModel):
    TaskId: str
    Step: int = Field(description="The step's index (Steps[i])")
    Name: str
    ItemCount: int = Field(description="How many items the step has, in every state")
    Items: list[ItemView] = Field(description="In item order")
    NextAfter: int | None = Field(description="Ask with after=this for the next page; null: this is the last")


class TaskCreated(BaseModel):
    task_id: str
    created: bool = Field(description="false: the idempotency key named an existing task")
    location: str
    task: TaskDetail


class TaskSummary(BaseModel):
    TaskId: str
    TaskType: str
    TaskStatus: int
    TaskStatusName: str
    TaskMessage: str
    TaskCursor: int
    StepStates: list[str] = Field(description="Each step's State, in order: progress at a glance (as its kind "
                                  "reads it: `rejected` for a rejected approval step, as `Shown.State`)")
    TimeCreate: float
    TimeStart: float | None
    TimeEnd: float | None
    Priority: int
    UserId: str | None
    Labels: dict[str, str]
    CancelRequested: OperatorRequest | None
    ScheduledFor: float | None = Field(None, description=SCHEDULED_FOR)
    WaitingFor: WaitCondition | None = Field(None, description="Not started yet: waiting for a lock (Kind lock, Key), a start slot of its rate (Kind rate, Key; `Rate.NextAt` the next free slot), for another task (Kind task, TaskId) or for a freeze window to end (Kind freeze, Key the window, Until its end); running: a step held by a drained module (Kind drain, Key the module)")
    Lock: TaskLock | None = Field(None, description="Its task type's lock: key, limit, pending|waiting|held|kept|released")
    FailedItems: int | None = Field(None, description="Succeeded with this many items failed within their for_each "
                                    "steps' failure budgets; null: none")


class TaskPage(BaseModel):
    items: list[TaskSummary]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page; null: no more")
    total: int = Field(description="How many tasks match the filters (every page together)")
    counts: dict[str, int] = Field(
        description="Per status name (SUCCESS, RUNNING...): the tasks matching every filter but status"
    )


class PhaseView(BaseModel):
    module: str
    command: str
    timeout: float
    retry: int
    backoff: BackoffPolicy


class StepView(BaseModel):
    name: str
    normal: PhaseView | None = Field(description="null for a sub-flow step: its child does the work")
    rollback: PhaseView | None
    after: list[str] = Field(description="The steps this one waits for (the graph's edges)")
    for_each: str | None = Field(None, description="The array parameter this step runs once per item of")
    max_parallel: int | None = Field(None, description="Items running at once (null: all)")
    max_items: int | None = Field(None, description="The longest list it fans out over (null: the input limits only)")
    tolerate: str | None = Field(None, description='Its failure budget ("3 items", "1% of items"); null: none')
    on_failure: str = Field("rollback", description="A failure past the budget: rollback, or hold for an operator")
    flow: str | None = Field(None, description="A sub-flow step: the child task's type")
    inputs: dict[str, str] = Field(default_factory=dict, description="Child parameter -> parent parameter")


class TaskTypeView(BaseModel):
    name: str
    description: str
    steps: list[StepView]
    parameters: dict[str, dict[str, Any]] | None = Field(
        description="The parameter schema (secrets' defaults masked); null: any parameters"
    )
    version: str | None = Field(None, description="Its flows.yaml `version:`, if it names one")
    content_hash: str = Field("", description="The hash of what a task of this type runs; every task records it (FlowHash)")


class TaskTypeList(BaseModel):
    items: list[TaskTypeView]


class AlarmView(Alarm):
    """An alarm as shown: with the current status of the task it is about (an alarm stays open
    after an operator dealt with its task: the status says whether that task still needs one)."""

    TaskStatus: int | None = Field(None, description="null: no task, or the task is gone")
    TaskStatusName: str | None = None


class AlarmList(BaseModel):
    items: list[AlarmView]


# Alarm and task ids are baton's own (hex), or a test's plain names: nothing else can match one.
Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._:-]{1,128}$")]


class AlarmFilter(_Request):
    kind: Id | None = Field(None, description="rollback_failed or dead_letter")
    task_id: Id | None = None


class AcknowledgeAlarms(_Request):
    """Which open alarms to acknowledge: `ids`, or every open one `filter` matches (both: either)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=at_least_one_of("ids", "filter"))

    ids: list[Id] = Field(default_factory=list, max_length=500)
    filter: AlarmFilter | None = None
    reason: Reason = Field(description="Recorded on every alarm acknowledged")


class AlarmsAcknowledged(BaseModel):
    acknowledged: list[str] = Field(description="Ids of the alarms this request acknowledged")
    already: list[str] = Field(description="Ids that were acknowledged before (left as they were)")
    unknown: list[str] = Field(description="Ids of no alarm")


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    ready: bool
    checks: dict[str, str] = Field(description='"ok", or why the store / broker failed')


class ErrorField(BaseModel):
    path: str
    message: str


class ErrorDetail(BaseModel):
    code: str
    message: str
    fields: list[ErrorField]


class ErrorBody(BaseModel):
    error: ErrorDetail


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The error answers a route may give, for its OpenAPI entry."""
    words = {
        401: "No valid bearer token", 403: "The token's role may not do this",
        404: "No such task, task type or alarm", 409: "The action does not fit the task's state",
        413: "The body is over the limit", 422: "The request is not valid (fields say where)",
        503: "The store or broker cannot be reached",
    }  # fmt: skip
    return {status: {"model": ErrorBody, "description": words[status]} for status in statuses}
