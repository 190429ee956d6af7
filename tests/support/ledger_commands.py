"""Commands whose side effects can be counted, for the end-to-end tests of steps over item
records (tests/e2e/test_fan_out_records.py), served by a real module process.

Every call notes a line in the ledger (tests/support/ledger_file.py): what ran, for which unit,
when, in which process. The effect itself is kept once per idempotency key: a command run twice
(its module killed after the effect, before the commit) leaves one effect, and the ledger still
shows both runs."""

import subprocess
import time

from common.runtime.registry import CommandContext, CommandRegistry
from tests.support.ledger_file import keep_effect, note

ledger = CommandRegistry("ledger")


@ledger.command()
def apply(ctx: CommandContext) -> dict:
    time.sleep(float(ctx.parameters.get("work_seconds", 0)))
    keep_effect(ctx, "apply")
    note(ctx, "apply")
    return {"applied": ctx.item_index if ctx.item_index is not None else ctx.cursor}


@ledger.command()
def undo(ctx: CommandContext) -> dict:
    keep_effect(ctx, "undo")
    note(ctx, "undo")
    return {}


@ledger.command()
def linger(ctx: CommandContext) -> dict:
    """A long command that starts a program of its own: it notes its start (with its own pid and
    the program's), works for `work_seconds`, then makes its effect. For the test that kills its
    module in the middle (tests/e2e/test_command_process_lifetime.py): nothing of it may remain."""
    helper = subprocess.Popen(["sleep", "600"])  # a program the command started: dies with it too
    note(ctx, "begun", helper=helper.pid)
    time.sleep(float(ctx.parameters.get("work_seconds", 0)))
    keep_effect(ctx, "apply")
    note(ctx, "apply")
    helper.kill()
    helper.wait()
    return {}

