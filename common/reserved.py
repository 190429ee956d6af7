"""What baton names for itself, and no client may take: a client's request is refused (422
naming the field) when it would pass for something baton made.

- idempotency keys starting with `schedule:`: a schedule's tick creates its task under
  `schedule:<id>:<tick in ms>`, and a client holding that key first would make the tick a
  repeat of the client's task (the tick lost, "one task per tick" broken);
- idempotency keys shaped like a sub-flow child's task id (`<parent id>.<step>[.<item>]`):
  `after_task` names a task by its id or its idempotency key, and such a key would stand for a
  child not created yet;
- the label `schedule`: the tasks of a schedule carry `schedule=<name>` (how they are listed), so
  a client's task must not pass for one, nor a schedule's labels override it;
- parameter names starting with `_baton_` (RESERVED_PREFIX), except
  `_baton_faults`, the fault-injection rules a client may send (modules honour them only with
  BATON_FAULT_INJECTION on).

User ids have no reserved form: baton's own actors (oss, sweeper, lock) are recorded in the
history's `Actor`, never as a task's owner.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

TICK_KEY_PREFIX = "schedule:"
RESERVED_PREFIX = "_baton_"  # parameter names baton keeps for itself (fault injection, a child's copy)
SCHEDULE_LABEL = "schedule"
# common.engine.kinds.sub_flow.entries.child_task_id: the parent's id (uuid4 hex), then ".<step>", ".<item>", ".g<n>".
CHILD_ID_PATTERN = r"[0-9a-f]{32}(?:\.(?:[0-9]+|g[0-9]+))+"
_CHILD_ID = re.compile(CHILD_ID_PATTERN)
# What the API's schema publishes: an idempotency key must not match it, nor a label key be it.
RESERVED_KEY_SCHEMA = {"not": {"pattern": f"^(?:{TICK_KEY_PREFIX}|{CHILD_ID_PATTERN}$)"}}
RESERVED_LABEL_SCHEMA = {"propertyNames": {"not": {"const": SCHEDULE_LABEL}}}

Problem = tuple[str, str]


def reserved_problems(idempotency_key: str | None, labels: Mapping[str, str] | None) -> list[Problem]:
    """Where a client's request takes a name baton keeps for itself (empty: nowhere)."""
    problems: list[Problem] = []
    if idempotency_key is not None:
        if idempotency_key.startswith(TICK_KEY_PREFIX):
            problems.append(("idempotency_key", f'keys starting with "{TICK_KEY_PREFIX}" are reserved for schedules\' ticks'))
        elif _CHILD_ID.fullmatch(idempotency_key):
            problems.append(("idempotency_key", "has the form of a sub-flow child's task id, reserved for baton"))
    if labels and SCHEDULE_LABEL in labels:
        problems.append((f"labels.{SCHEDULE_LABEL}", "reserved: baton labels the tasks of a schedule with it"))
    return problems
