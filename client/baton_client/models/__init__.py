"""Every request and answer of the API, as typed models (checked against OSS's OpenAPI document)."""

from baton_client.models.fleet import (
    AccessView, Amounts, DrainView, Health, HolderView, HostView, LockView, ModuleView, NamespaceView, Readiness,
    ScheduleView, WaiterView, WorkerView,
)  # fmt: skip
from baton_client.models.listing import ItemPage, ItemView, TaskCreated, TaskPage, TaskSummary
from baton_client.models.operations import (
    AlarmsAcknowledged, AlarmView, BulkOutcome, CallbackAccepted, MigrationOutcome, Refusal, Refused,
)  # fmt: skip
from baton_client.models.plan import (
    Plan, PlanCommand, PlanForEach, PlanLock, PlanModule, PlanRate, PlanStart, PlanStep, PlanSubFlow,
)  # fmt: skip
from baton_client.models.task import (
    FINAL_STATUSES, AttemptView, BackoffPolicy, ChildTemplate, HeldUnit, HistoryEvent, NotifyTarget, OperatorRequest,
    OutboxEntry, ParentLink, Run, Step, StepDetail, StepItem, TaskDetail, TaskStatus, Tolerance, WaitCondition,
    ShownWait, WaitWord,
)  # fmt: skip
from baton_client.models.task_types import PhaseView, StepView, TaskTypeView

__all__ = [
    "FINAL_STATUSES", "AccessView", "AlarmView", "AlarmsAcknowledged", "Amounts", "AttemptView", "BackoffPolicy", "BulkOutcome", "CallbackAccepted",
    "ChildTemplate", "DrainView", "Health", "HeldUnit", "HistoryEvent", "HolderView", "HostView", "ItemPage", "ItemView",
    "LockView", "MigrationOutcome", "ModuleView", "NamespaceView", "NotifyTarget", "OperatorRequest", "OutboxEntry", "ParentLink",
    "PhaseView", "Plan", "PlanCommand", "PlanForEach", "PlanLock", "PlanModule", "PlanRate", "PlanStart", "PlanStep",
    "PlanSubFlow", "Readiness", "Refusal", "Refused", "Run", "ScheduleView", "Step", "StepDetail", "StepItem",
    "StepView", "TaskCreated", "TaskDetail", "TaskPage", "TaskStatus", "TaskSummary", "TaskTypeView", "Tolerance",
    "ShownWait", "WaitCondition", "WaitWord", "WaiterView", "WorkerView",
]
