"""Tasks and task types as the API shows them. Every task goes through common.masking first."""

from __future__ import annotations

from common.flows import FlowDefinition
from common.masking import masked_task
from common.models import Step, Task
from common.statuses import Phase
from oss.api.schemas import PhaseView, StepView, TaskSummary, TaskTypeView


def task_view(task: Task) -> Task:
    return masked_task(task)


def task_summary(task: Task) -> TaskSummary:
    shown = masked_task(task)  # TaskMessage may quote a secret
    return TaskSummary(
        TaskId=shown.TaskId,
        TaskType=shown.TaskType,
        TaskStatus=int(shown.TaskStatus),
        TaskStatusName=shown.TaskStatus.name,
        TaskMessage=shown.TaskMessage,
        TaskCursor=shown.TaskCursor,
        StepStates=[step.State.value for step in shown.Steps],
        TimeCreate=shown.TimeCreate,
        TimeStart=shown.TimeStart,
        TimeEnd=shown.TimeEnd,
        Priority=shown.Priority,
        UserId=shown.UserId,
        Labels=shown.Labels,
        CancelRequested=shown.CancelRequested,
    )


def task_type_view(flow: FlowDefinition) -> TaskTypeView:
    return TaskTypeView(
        name=flow.name,
        description=flow.description,
        steps=[_step_view(step) for step in flow.steps],
        parameters=flow.parameter_schema.describe() if flow.parameter_schema else None,
    )


def _step_view(step: Step) -> StepView:
    def phase(which: Phase) -> PhaseView:
        return PhaseView(
            module=step.module(which),
            command=step.command(which),
            timeout=step.timeout(which),
            retry=step.retry(which),
            backoff=step.backoff(which),
        )

    return StepView(
        name=step.Name,
        normal=phase(Phase.NORMAL),
        rollback=phase(Phase.ROLLBACK) if step.has_rollback else None,
    )
