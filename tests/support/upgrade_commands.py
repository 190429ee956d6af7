"""The `first` and `second` modules of the rolling-upgrade test (tests/chaos/test_rolling_upgrade.py),
served by the previous release's processes and by the current ones alike: it uses only the module
SDK both offer. The test copies this file as the top-level module `upgrade_commands`, so that a
process of either release imports the same commands (its `tests` package is its own release's).

Every command notes a line in the ledger file BATON_TEST_LEDGER names (one write with O_APPEND:
lines of concurrent processes never interleave): `begun` as it starts, then `apply` or `undo` once
its effect is made, or `failed` as a planned failure ends it (a command begun and not ended is in
flight). The effect is kept once per idempotency key, as a real module keeps it (a file created
with O_EXCL in BATON_TEST_EFFECTS). A line names the unit (task, step, item), the key and
`owner`, the module process that claimed it (`module@host:pid:...`): which release ran it.
"""

import json
import os
import time

from common.errors import CommandFailed
from common.runtime.registry import CommandContext, CommandRegistry

first, second = CommandRegistry("first"), CommandRegistry("second")


def note(ctx: CommandContext, op: str) -> None:
    line = json.dumps({"op": op, "task": ctx.task_id, "cursor": ctx.cursor, "item": ctx.item_index,
                       "key": ctx.idempotency_key, "owner": ctx.owner, "time": time.time()}) + "\n"
    fd = os.open(os.environ["BATON_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def effect(ctx: CommandContext, op: str) -> None:
    path = os.path.join(os.environ["BATON_TEST_EFFECTS"], f"{op}-{ctx.idempotency_key}".replace(":", "_").replace("/", "_"))
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        pass  # made by an earlier run of the same unit (its module stopped before the commit)


@first.command()
@second.command()
def apply(ctx: CommandContext) -> dict:
    note(ctx, "begun")
    time.sleep(float(ctx.parameters.get("work_seconds", 0)))  # the work a replacement finds in flight
    if ctx.cursor == ctx.parameters.get("fail_at"):
        note(ctx, "failed")
        raise CommandFailed(f"step {ctx.cursor} fails for good, as planned", retryable=False)
    effect(ctx, "apply")
    note(ctx, "apply")
    return {"applied": ctx.item_index if ctx.item_index is not None else ctx.cursor}


@first.command()
@second.command()
def undo(ctx: CommandContext) -> dict:
    note(ctx, "begun")
    effect(ctx, "undo")
    note(ctx, "undo")
    return {}
