"""The answer to a submission (TaskCreated's JSON), byte for byte task_view's, for less.

task_view dumps the task's document, masks it, applies the held view and validates the result
as the view model: for a task whose masking and held view change nothing, that round trip only
copies the task. Here such a task's view is built from the task's own values instead (about half
an answer's cost); any other task takes task_view's way.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from common.engine.document import Task
from common.prevalidated import prevalidated
from common.engine.views import held_view
from common.secrets.documents import mask_parameters
from oss.api.schemas import StepDetail, TaskCreated, TaskDetail
from oss.api.views import derived_view, task_view

Shown = TypeVar("Shown", bound=BaseModel)


def created_answer(task: Task, now: float, created: bool, location: str) -> str:
    """TaskCreated's JSON for `task`: the task a submission made, or the one its idempotency key
    named before (`created` False)."""
    shown = unmasked_view(task, now)
    if shown is not None:
        answer = _answer(task, derived_view(shown, task, now), created, location)
        # No string quotes "://": no URL whose password or query the masks would hide.
        if "://" not in answer:
            return answer
    return _answer(task, task_view(task, now), created, location)


def unmasked_view(task: Task, now: float) -> TaskDetail | None:
    """The task as the view model, from its own values, when nothing of it is masked or held
    (what masked_task_view would change); None otherwise. A URL is left to the caller to find."""
    if type(task) is not TaskDetail.__base__ or any(type(step) is not StepDetail.__base__ for step in task.Steps):
        return None  # a subclass's fields would not be the view's
    if task.SecretParameters or task.Notify or any(step.Items for step in task.Steps):
        return None  # declared secrets; webhook URLs (always redacted); inline items' outputs
    for run in task.Runs:
        if run.Callback is not None and run.Callback.Kept is not None:
            return None  # a callback's answer kept until its command returns: another system's output
    bodies = [e.Body for e in task.Outbox if isinstance(e.Body.get("Parameters"), dict)]
    if any(_masked(parameters, ()) for parameters in (task.Parameters, task.SubmittedParameters)) or any(
            _masked(body["Parameters"], body.get("SecretParameters") or ()) for body in bodies):
        return None  # a key named like a secret
    held = held_view(task, now)
    if held.units or held.steps or held.wait is not None:
        return None  # shown otherwise than stored
    task.refresh_derived()  # as the document task_view dumps has them
    return _view_copy(TaskDetail, task, Steps=[_view_copy(StepDetail, step) for step in task.Steps])


def _masked(parameters: dict[str, Any], names: Any) -> bool:
    return mask_parameters(parameters, names) != parameters


def _view_copy(view: type[Shown], model: BaseModel, **replaced: Any) -> Shown:
    """A `view` (a model that adds fields to `model`'s class) holding `model`'s values, with the
    fields it adds at their defaults: what view.model_validate(model.model_dump()) makes of a
    valid model, without the dump and the validation (as model_construct does, whose per-field
    default lookup costs as much as the validation). Values are shared: a view sets fields of its
    own, never edits the task's."""
    values = {**model.__dict__, **replaced}  # the model's field order, then the view's own
    added = _ADDED.get(view)
    if added is None:
        added = _ADDED[view] = [(name, field.default, field.default_factory) for name, field in view.model_fields.items()
                                if name not in view.__base__.model_fields]  # fmt: skip
    for name, default, factory in added:
        values[name] = factory() if factory is not None else default  # type: ignore[call-arg]
    return prevalidated(view, values, set(model.model_fields_set))


_ADDED: dict[type[BaseModel], list[tuple[str, Any, Any]]] = {}  # a view's own fields: name, default, factory


def _answer(task: Task, shown: TaskDetail, created: bool, location: str) -> str:
    return TaskCreated(task_id=task.TaskId, created=created, location=location, task=shown).model_dump_json()
