"""The `first` and `second` modules of the rolling-upgrade test (tests/chaos/test_rolling_upgrade.py),
served by the previous release's processes and by the current ones alike: it uses only the module
SDK both offer. The test copies this file as the top-level module `upgrade_commands`, and
tests/support/ledger_file.py beside it as `ledger_file`, so that a process of either release
imports the same commands (its `tests` package is its own release's).

Every command notes a line in the ledger (ledger_file): `begun` as it starts, then `apply` or
`undo` once its effect is made, or `failed` as a planned failure ends it (a command begun and not
ended is in flight). The effect is kept once per idempotency key. A line names the unit (task,
step, item), the key and `owner`, the module process that claimed it (`module@host:pid:...`):
which release ran it.
"""

import time

from common.errors import CommandFailed
from common.runtime.registry import CommandContext, CommandRegistry
from ledger_file import keep_effect  # the copy beside this file: see above
from ledger_file import note as ledger_note

first, second = CommandRegistry("first"), CommandRegistry("second")


def note(ctx: CommandContext, op: str) -> None:
    ledger_note(ctx, op, owner=ctx.owner)


@first.command()
@second.command()
def apply(ctx: CommandContext) -> dict:
    note(ctx, "begun")
    time.sleep(float(ctx.parameters.get("work_seconds", 0)))  # the work a replacement finds in flight
    if ctx.cursor == ctx.parameters.get("fail_at"):
        note(ctx, "failed")
        raise CommandFailed(f"step {ctx.cursor} fails for good, as planned", retryable=False)
    keep_effect(ctx, "apply")
    note(ctx, "apply")
    return {"applied": ctx.item_index if ctx.item_index is not None else ctx.cursor}


@first.command()
@second.command()
def undo(ctx: CommandContext) -> dict:
    note(ctx, "begun")
    keep_effect(ctx, "undo")
    note(ctx, "undo")
    return {}
