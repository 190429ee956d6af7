"""A task as it may be shown: to an API client, on a terminal, in a log line.

Three layers, because a secret can hide in three ways:
1. Parameters declared `secret: true` in flows.yaml (named in the task's SecretParameters);
2. keys that look secret wherever they are (common.logging.mask_secrets), e.g. a command's
   output such as instance.password merged into Parameters;
3. the VALUE of either copied into free text (a step's error message quoting a connection
   string, say): every string in the document is scrubbed of those values. Values shorter than
   MIN_SCRUBBED characters are not scrubbed from text: they would mangle ordinary words, and
   flows.yaml can demand a longer secret with min_length. The scrubbing costs one pass over
   each string however many values there are (common.scrubbing).

The document keeps its shape (a masked value becomes "***"), so a view still validates as a Task.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Any

from common.logging import MASK, SECRET_KEY, mask_secrets, mask_url_passwords, redacted_url
from common.engine.document import Alarm, Run, Task
from common.engine.gates.drain import drain_wait
from common.scrubbing import Scrubber

MIN_SCRUBBED = 4


def masked_task_view(task: Task, item_runs: Iterable[Run] = ()) -> dict[str, Any]:
    """The whole task document, JSON-able, with every secret masked. `item_runs`: the runs of its
    items kept in records, as a reader found them (oss.item_views.item_runs), for `WaitingFor`."""
    names = set(task.SecretParameters)
    doc = task.to_doc()
    for field in ("Parameters", "SubmittedParameters"):
        doc[field] = mask_parameters(doc[field], names)
    for target in doc.get("Notify") or []:  # a webhook URL often carries a token (its query)
        if target.get("Url"):
            target["Url"] = redacted_url(target["Url"])
    for entry in doc["Outbox"]:  # step messages and a child's start carry a copy of the parameters
        if "://" in (entry.get("Queue") or ""):  # a webhook entry is queued for its receiver's URL
            entry["Queue"] = redacted_url(entry["Queue"])
        body = entry["Body"]
        if isinstance(body.get("Parameters"), dict):
            body["Parameters"] = mask_parameters(body["Parameters"], names | set(body.get("SecretParameters") or []))
    values = set(secret_values(task))
    for step in doc["Steps"]:  # an item's output joins the parameters only when its step succeeds
        for item in step.get("Items") or ():
            values.update(_secret_values(item["Output"], ()))
            item["Output"] = mask_secrets(item["Output"])
    if doc.get("WaitingFor") is None and (wait := drain_wait(task, item_runs)) is not None:  # derived, never stored
        doc["WaitingFor"] = wait.model_dump(mode="json")
    return _scrubbed(doc, Scrubber(sorted(values, key=len, reverse=True)))  # type: ignore[no-any-return]


def masked_items(task: Task, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items of a `for_each` step as shown (common.engine.kinds.item_views.item_doc), masked as
    the task view masks its inline items: the task's secret values scrubbed from every string.
    An output's secret-looking keys are masked too, with their values scrubbed wherever they
    are quoted: an item's output joins the task's parameters only when its step succeeds."""
    outputs = [item.get("Output") or {} for item in items]
    values = set(secret_values(task)) | {v for output in outputs for v in _secret_values(output, ())}
    shown = [{**item, "Output": mask_secrets(item["Output"])} if "Output" in item else item for item in items]
    return _scrubbed(shown, Scrubber(sorted(values, key=len, reverse=True)))  # type: ignore[no-any-return]


def masked_alarm(alarm: Alarm, task: Task | None) -> Alarm:
    """An alarm's text may quote a failure message: scrub the secrets of the task it is about."""
    values = secret_values(task) if task is not None else []
    return Alarm.model_validate(_scrubbed(alarm.model_dump(mode="json"), Scrubber(values)))


def scrubbed_text(text: str, task: Task, values: list[str] | None = None) -> str:
    """Free text about a task (a failure message, an alarm) with its secret values masked
    (`values`: the task's secret_values, when the caller has them already)."""
    return _scrubbed(text, Scrubber(secret_values(task) if values is None else values))  # type: ignore[no-any-return]


def masked_task(task: Task, item_runs: Iterable[Run] = ()) -> Task:
    """masked_task_view as a Task, for code that renders Task objects."""
    return Task.from_doc(masked_task_view(task, item_runs))


def masked_with_parameters(doc: dict[str, Any], secret_names: Collection[str]) -> dict[str, Any]:
    """A JSON-able document that holds `Parameters` but is not a task (a schedule), masked as a
    task's view is: declared secrets and secret-looking keys in Parameters, their values and URL
    passwords wherever they are quoted (an error message)."""
    values = parameter_secret_values(doc["Parameters"], secret_names)
    shown = {**doc, "Parameters": mask_parameters(doc["Parameters"], secret_names)}
    return _scrubbed(shown, Scrubber(values))  # type: ignore[no-any-return]


def mask_parameters(parameters: dict[str, Any], secret_names: Collection[str]) -> dict[str, Any]:
    marked = {key: MASK if key in secret_names else value for key, value in parameters.items()}
    return mask_secrets(marked)  # type: ignore[no-any-return]


def secret_values(task: Task) -> list[str]:
    """The task's secret values as text, for common.logging.hidden_values."""
    names = set(task.SecretParameters)
    values = set(_secret_values(task.Parameters, names)) | set(_secret_values(task.SubmittedParameters, names))
    return sorted(values, key=len, reverse=True)


def parameter_secret_values(parameters: dict[str, Any], secret_names: Collection[str]) -> list[str]:
    """The secret values of parameters that are not (yet) a task's: a schedule's, say."""
    return sorted(set(_secret_values(parameters, set(secret_names))), key=len, reverse=True)


def _secret_values(parameters: dict[str, Any], names: Collection[str]) -> Iterator[str]:
    for key, value in parameters.items():
        if key in names or SECRET_KEY.search(key):
            yield from _leaves(value)
        elif isinstance(value, dict):
            yield from _secret_values(value, ())
        elif isinstance(value, list):
            yield from _secret_values_in_list(value)


def _secret_values_in_list(values: list[Any]) -> Iterator[str]:
    """A list's keys are its indices, never secret-looking: only the dicts in it may name a
    secret. Its plain values are passed over without a look (a for_each list of 10,000 hosts)."""
    for value in values:
        if isinstance(value, dict | list):  # one look per plain value
            yield from _secret_values(value, ()) if isinstance(value, dict) else _secret_values_in_list(value)


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif value is not None and not isinstance(value, bool):
        text = str(value)
        if len(text) >= MIN_SCRUBBED:
            yield text


def _scrubbed(value: Any, secrets: Scrubber) -> Any:
    """`value` with the secret values and URL passwords masked in every string (keys stay: a
    view must keep the document's shape).

    One walk that touches only strings: a task document has a couple of hundred leaves, and two
    walks rebuilding all of it (scrub, then URLs) cost more than the rest of an API answer."""
    if isinstance(value, str):
        value = secrets.text(value)
        return mask_url_passwords(value) if "://" in value else value
    if isinstance(value, dict):
        return {key: _scrubbed(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        if not secrets:  # nothing to scrub: a plain string without a URL stays as it is
            return [item if type(item) is str and "://" not in item else _scrubbed(item, secrets) for item in value]
        return [_scrubbed(item, secrets) for item in value]
    return value
