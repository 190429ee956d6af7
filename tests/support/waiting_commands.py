"""Commands that answer "not done yet, check again later" (docs/design/operations.md), for the
end-to-end tests of tests/e2e/test_check_again.py: served by a real module process through the
real runtime (tests/support/run_registry.py).

`poll` counts the checks it already answered from the task's own history, or its item's record's
in a step over item records (read from the store, as a real command reads the state of what it
waits for), so it needs no state of its own."""

import os

from common.engine.core.check_again import check_again
from common.engine.core.fence import item_record_of
from common.runtime.registry import CommandContext, CommandRegistry

waiter = CommandRegistry("waiter")


def _checks_so_far(ctx: CommandContext) -> int:
    task = ctx.read_task(ctx.task_id) if ctx.read_task else None
    assert task is not None, "the module runs without a store"
    record = item_record_of(task, ctx.cursor, ctx.item_index, ctx.read_item)
    history = record.History if record is not None else task.History
    return sum(1 for e in history if e.Event == "check_again" and e.Cursor == ctx.cursor
               and e.Item == ctx.item_index and e.Phase == ctx.phase)


@waiter.command()
def poll(ctx: CommandContext) -> dict:
    """Not done until it has been asked `polls` times, `interval` seconds apart, and, given
    `go_ahead` (a file's path), until that file exists: a test then decides when it ends by a
    state it waited for, however slow the machine."""
    polls, interval = int(ctx.parameters.get("polls", 3)), float(ctx.parameters.get("interval", 0.2))
    done = _checks_so_far(ctx)
    if done < polls:
        return check_again(interval, f"{done + 1} of {polls} checks")
    go_ahead = ctx.parameters.get("go_ahead")
    if go_ahead and not os.path.exists(go_ahead):
        return check_again(interval, f"{polls} of {polls} checks; waiting for the go-ahead")
    return {"polled": done}


@waiter.command()
def never_done(ctx: CommandContext) -> dict:
    return check_again(float(ctx.parameters.get("interval", 0.2)), "still waiting")


@waiter.command()
def quick(ctx: CommandContext) -> dict:
    return {f"quick_{ctx.cursor}": True}


@waiter.command()
def undo(ctx: CommandContext) -> dict:
    return {}
