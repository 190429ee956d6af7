"""`baton get`'s summary of a plain task, from its masked document (a dict), for the quick reads
(oss/cli/quick_reads.py): without the document model, the kinds and the gates.

A plain task is the common case: every step a command step (no items, no child task, no kind
the fields do not imply, none with a rate), no lock, no rate, no wait, no run held by a drain. For it the summary is the
one oss.cli.render.task_summary prints, line for line (tests/integration/test_cli_quick_reads.py
compares the two on tasks in every state); for any other task plain_summary answers None and
the command renders it the full way.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from common.engine.states import TaskStatus
from common.secrets.documents import mask_secrets


def when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%H:%M:%S.%f")[:-3]


def is_plain(doc: dict[str, Any]) -> bool:
    # A wait, a lock, a rate or a delayed start: the gates tell how it is held (the full rendering).
    if any(doc.get(key) is not None for key in ("WaitingFor", "Lock", "Rate", "StartAt")):
        return False
    # A run held by a drain, or parked (a command waiting for a callback): a derived wait.
    if any(run.get("HeldBy") is not None or run.get("State") == "parked" for run in doc.get("Runs") or ()):
        return False
    # The command kind, as the fields imply it (a step of another kind is written with `Kind`).
    return all("Kind" not in step and "Rate" not in step and step.get("ForEach") is None and step.get("Source") is None
               and step.get("Flow") is None
               and not step.get("Items") and step.get("ItemStore") is None and step.get("ChildTaskId") is None
               and isinstance(step.get("After"), list) for step in doc["Steps"])  # fmt: skip


def plain_summary(doc: dict[str, Any]) -> str | None:
    """The summary of a plain task's masked document; None for any other task."""
    if not is_plain(doc):
        return None
    status = TaskStatus(doc["TaskStatus"])
    lines = [f"task {doc['TaskId']}  type {doc['TaskType']}  status {status.value} ({status.name})  "
             f"cursor {doc['TaskCursor']}"]  # fmt: skip
    if doc.get("TaskMessage"):
        lines.append(f"  message: {doc['TaskMessage']}")
    if doc.get("FlowHash") is not None:
        label = f"{doc['FlowVersion']} ({doc['FlowHash']})" if doc.get("FlowVersion") else doc["FlowHash"]
        lines.append(f"  flow version: {label}")
    steps = doc["Steps"]
    for index, step in enumerate(steps):
        start, end = step.get("TimeStart"), step.get("TimeEnd")
        duration = f"{end - start:.3f}s" if end and start else "-"
        after = step["After"]
        note = ""
        if after != ([index - 1] if index else []):
            note = "  (after " + (", ".join(steps[i]["Name"] for i in after) or "nothing") + ")"
        message = step.get("Message") or ""
        lines.append(f"  [{index}] {step['Name']:<20} {step['State']:<16} attempts {step.get('Attempts', 0)}"
                     f"  {duration}{note}{'  ' + message if message else ''}")  # fmt: skip
        if step.get("WaitingSince") is not None:  # check again later: not done yet
            progress = step.get("Progress") or ""
            lines.append(f"      not done yet, waiting since {when(step['WaitingSince'])}"
                         f"{': ' + progress if progress else ''}")  # fmt: skip
    lines.append(f"  parameters: {mask_secrets(doc.get('Parameters') or {})}")
    return "\n".join(lines)
