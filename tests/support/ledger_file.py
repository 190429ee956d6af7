"""The ledger and effects that test commands keep, for the tests to count side effects from
instead of from the task documents. Standard library only: the rolling-upgrade test copies this
file beside its commands as the top-level module `ledger_file`, so that processes of the previous
release, whose `tests` package is their own, write the same lines.

The ledger is the file BATON_TEST_LEDGER names: a JSON line a call, written with one O_APPEND
write, so that lines of concurrent processes never interleave and a process killed before the
write left none. An effect is kept once per idempotency key, as a real module keeps it: a file
created with O_EXCL in the directory BATON_TEST_EFFECTS names.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from common.runtime.registry import CommandContext


def note(ctx: CommandContext, op: str, **extra: object) -> None:
    """A line naming what ran (`op`) for which unit (task, step, item, idempotency key), when,
    in which process."""
    line = json.dumps({"op": op, "task": ctx.task_id, "cursor": ctx.cursor, "item": ctx.item_index,
                       "key": ctx.idempotency_key, "time": time.time(), "pid": os.getpid(), **extra}) + "\n"
    fd = os.open(os.environ["BATON_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def keep_effect(ctx: CommandContext, op: str, folder: str | None = None) -> bool:
    """Make the unit's `op` effect in `folder` (BATON_TEST_EFFECTS by default): True if this run
    made it, False if an earlier run of the same unit did (its module stopped before the commit)."""
    name = f"{op}-{ctx.idempotency_key}".replace(":", "_").replace("/", "_")
    try:
        os.close(os.open(os.path.join(folder or os.environ["BATON_TEST_EFFECTS"], name),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))  # fmt: skip
    except FileExistsError:
        return False
    return True


def read_ledger(path: str | os.PathLike[str]) -> list[dict]:
    """The ledger's lines, oldest first (none before the first write)."""
    try:
        with open(path) as lines:
            return [json.loads(line) for line in lines if line.strip()]
    except FileNotFoundError:
        return []
