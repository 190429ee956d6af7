"""The version of a task type: a content hash of what a task of that type runs, and the diff
between two revisions of flows.yaml.

The hash covers everything that changes what a task does or how it is checked (the steps with
their defaults applied, a sub-flow's child steps, the parameter schema, the lock, the deadline,
the webhook events) and nothing that does not (the description, comments, key order), so an
edit that changes behaviour always changes it and a reformatted file never does.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from common.engine.registry import flows_parts
from common.engine.views import step_definition

if TYPE_CHECKING:
    from common.engine.document import LockTemplate, Step
    from common.flows.catalog import FlowCatalog
    from common.flows.schema import TaskTypeSpec

def content_hash(steps: list[Step], spec: TaskTypeSpec, lock: LockTemplate | None) -> str:
    """`lock`: the type's built lock, whose dump carries a mode's row of `lock_modes` (an
    exclusive lock's is the key and limit alone, as before modes)."""
    body = {
        "steps": [step_definition(s) for s in steps],
        "parameters": None if spec.parameters is None else {k: v.model_dump(mode="json") for k, v in spec.parameters.items()},
        "lock": None if lock is None else {k.lower(): v for k, v in lock.model_dump(mode="json").items()},
        "deadline": spec.deadline,
        "notify": None if spec.notify is None else spec.notify.model_dump(mode="json"),
    }
    for part in flows_parts():  # each gate's keys on the task type, left out when not declared
        body.update(part.hashed(spec))
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def diff_catalogs(old: FlowCatalog, new: FlowCatalog) -> list[str]:
    """What changed from `old` to `new`, one line per change, task types in name order; empty
    when every type runs the same as before."""
    lines: list[str] = []
    for name in sorted(set(old.task_types) | set(new.task_types)):
        before, after = old.task_types.get(name), new.task_types.get(name)
        if before is None:
            lines.append(f"+ {name}: new task type ({_label(after)})")
        elif after is None:
            lines.append(f"- {name}: removed (was {_label(before)})")
        elif before.content_hash != after.content_hash or before.version != after.version:
            lines.append(f"~ {name}: {_label(before)} -> {_label(after)}")
            lines += [f"    {change}" for change in _step_changes(before.steps, after.steps)]
            if before.content_hash == after.content_hash:
                lines.append("    (only the version label changed)")
            elif not _step_changes(before.steps, after.steps):
                lines.append("    parameters, lock, rate, deadline or webhook changed")
    return lines


def _label(definition: Any) -> str:
    return f"version {definition.version}, {definition.content_hash}" if definition.version else definition.content_hash


def _step_changes(before: list[Step], after: list[Step]) -> list[str]:
    old = {s.Name: step_definition(s) for s in before}
    new = {s.Name: step_definition(s) for s in after}
    changes = [f"+ step {name}" for name in new if name not in old]
    changes += [f"- step {name}" for name in old if name not in new]
    for name in (n for n in new if n in old and old[n] != new[n]):
        fields = sorted(k for k in set(old[name]) | set(new[name]) if old[name].get(k) != new[name].get(k))
        changes.append(f"~ step {name}: {', '.join(fields)}")
    if [s.Name for s in before if s.Name in new] != [s.Name for s in after if s.Name in old]:
        changes.append("~ step order")
    return changes
