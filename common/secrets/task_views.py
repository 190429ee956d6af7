"""A task as it may be shown, every secret masked as common.secrets.documents describes: the whole
task document (its inline items' outputs among it), the items of a step kept in records, an
alarm about it. The view keeps the document's shape, so it still validates as a Task.

The engine's document model is imported when a view is made, not with this module: a command
that only imports it starts without building the model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from common.secrets.documents import mask_parameters, mask_secrets, scrub_strings
from common.secrets.scrubber import Scrubber
from common.secrets.urls import redacted_url
from common.secrets.values import secret_values, secret_leaves

if TYPE_CHECKING:
    from common.engine.document import Alarm, Run, Task


def masked_task_view(task: Task, item_runs: Iterable[Run] = (), now: float | None = None) -> dict[str, Any]:
    """The whole task document, JSON-able, with every secret masked. `item_runs`: the runs of its
    items kept in records, as a reader found them (oss.services.item_views.item_runs), for
    `WaitingFor`. `now`: the time of the view (a unit a gate holds, a delayed start not due yet
    or a drained module, is shown `waiting`: common.engine.core.held_view); the clock's when None."""
    import pydantic_core  # with the document model: a command's quick read (masked_doc) loads neither

    from common.engine.views import held_view, show_held

    doc = task.to_doc()
    show_held(doc, held_view(task, time.time() if now is None else now, item_runs))  # derived, never stored
    # Masking never adds "://" (a masked value has none, a redacted URL keeps only its own): none
    # before, none after. pydantic-core's dump costs a fraction of json.dumps's.
    return masked_doc(doc, url_free=b"://" not in pydantic_core.to_json(doc, fallback=str, inf_nan_mode="constants"))


def masked_doc(doc: dict[str, Any], *, url_free: bool = False) -> dict[str, Any]:
    """A task document as stored or dumped, every secret masked: what masked_task_view shows,
    without the document model (`baton list` reads the stored JSON). Changes `doc` itself: give
    it a fresh one (decoded or dumped for this view). `url_free`: the caller found "://" in none
    of its strings.

    The answer to a submission skips this for a task where none of the sources below applies
    (oss/api/created_view.py `unmasked_view`): a source of secrets added here belongs in its check
    too (tests/api/test_created_answer.py compares both ways)."""
    names = set(doc.get("SecretParameters") or ())
    values = secret_leaves(doc.get("Parameters") or {}, names)  # secret_values(task), before the masks
    values |= secret_leaves(doc.get("SubmittedParameters") or {}, names)
    for field in ("Parameters", "SubmittedParameters"):
        doc[field] = mask_parameters(doc.get(field) or {}, names)
    for target in doc.get("Notify") or []:  # a webhook URL often carries a token (its query)
        if target.get("Url"):
            target["Url"] = redacted_url(target["Url"])
    for entry in doc.get("Outbox") or []:  # step messages and a child's start carry a copy of the parameters
        if "://" in (entry.get("Queue") or ""):  # a webhook entry is queued for its receiver's URL
            entry["Queue"] = redacted_url(entry["Queue"])
        body = entry["Body"]
        if isinstance(body.get("Parameters"), dict):
            body["Parameters"] = mask_parameters(body["Parameters"], names | set(body.get("SecretParameters") or []))
    for step in doc.get("Steps") or ():  # an item's output joins the parameters only when its step succeeds
        for item in step.get("Items") or ():
            values.update(secret_leaves(item["Output"], ()))
            item["Output"] = mask_secrets(item["Output"])
    for kept in kept_answers(doc.get("Runs") or ()):  # a callback's output, kept until its command returns
        values.update(secret_leaves(kept["Output"], ()))
        kept["Output"] = mask_secrets(kept["Output"])
    scrubber = Scrubber(sorted(values, key=len, reverse=True))
    if not scrubber and (url_free or "://" not in json.dumps(doc, default=str)):
        # Nothing to scrub: no secret value, and no string that could be a URL with a password
        # (JSON writes "://" as it is, and only inside a string). One dump in C costs a fraction
        # of the walk below, which would rebuild every leaf of a task each time one is shown (a
        # submission's answer).
        return doc
    return scrub_strings(doc, scrubber)  # type: ignore[no-any-return]


def kept_answers(runs: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The callback answers kept on `runs` (documents) while their commands still run: another
    system's output, which joins the parameters (and their masks) only once it is applied."""
    for run in runs:
        kept = (run.get("Callback") or {}).get("Kept")
        if kept and kept.get("Output"):
            yield kept


def masked_runs(runs: Iterable[Run]) -> list[Run]:
    """`runs` as a view shows them: a kept callback answer's output masked as a task's is."""
    shown = []
    for run in runs:
        if run.Callback is None or run.Callback.Kept is None or not run.Callback.Kept.Output:
            shown.append(run)  # most runs: nothing kept, shown as they are
            continue
        from common.engine.document import Run  # (here: a view of runs without one imports nothing)

        doc = run.model_dump()
        for kept in kept_answers([doc]):
            kept["Output"] = scrub_strings(mask_secrets(kept["Output"]), Scrubber(secret_leaves(kept["Output"], ())))
        shown.append(Run.model_validate(doc))
    return shown


def masked_items(task: Task, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items of a `for_each` step as shown (common.engine.kinds.for_each.item_views.item_doc), masked as
    the task view masks its inline items: the task's secret values scrubbed from every string.
    An output's secret-looking keys are masked too, with their values scrubbed wherever they
    are quoted: an item's output joins the task's parameters only when its step succeeds."""
    outputs = [item.get("Output") or {} for item in items]
    # An item's value too: a source's items never pass through the task's parameters, whose
    # masking would have hidden their secret-looking keys (docs/design/item-sources.md, "Secrets").
    held = [{"Value": item.get("Value"), **output} for item, output in zip(items, outputs)]
    values = set(secret_values(task)) | {v for both in held for v in secret_leaves(both, ())}
    shown = [{**item, **({"Output": mask_secrets(item["Output"])} if "Output" in item else {}),
              **({"Value": mask_secrets(item["Value"])} if isinstance(item.get("Value"), dict | list) else {})}
             for item in items]
    return scrub_strings(shown, Scrubber(sorted(values, key=len, reverse=True)))  # type: ignore[no-any-return]


def masked_alarm(alarm: Alarm, task: Task | None) -> Alarm:
    """An alarm's text may quote a failure message: scrub the secrets of the task it is about."""
    from common.engine.document import Alarm

    values = secret_values(task) if task is not None else []
    return Alarm.model_validate(scrub_strings(alarm.model_dump(mode="json"), Scrubber(values)))


def masked_task(task: Task, item_runs: Iterable[Run] = (), now: float | None = None) -> Task:
    """masked_task_view as a Task, for code that renders Task objects."""
    from common.engine.document import Task

    return Task.from_doc(masked_task_view(task, item_runs, now))
