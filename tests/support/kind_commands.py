"""Commands of the in-process kinds (docs/design/runtime.md) for tests/e2e/test_command_kinds.py,
served by a real module process through the real runtime (tests/support/run_registry.py).

What a command saw is written as a file in the task's `marks` directory (the test reads it):
`{task}-{attempt}.cancelled` when it observed its cancellation, `{task}-{attempt}.started` when
it began (`{task}-{attempt}-i{item}.*` for an item of a for_each step). No state of its own: a module process may be restarted between attempts."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path

import structlog

from common.engine.core.check_again import check_again
from common.engine.core.fence import StaleFence
from common.runtime.registry import CommandContext, CommandRegistry

kinds = CommandRegistry("kinds")
log = structlog.get_logger(__name__)


def mark(ctx: CommandContext, what: str) -> None:
    marks = ctx.parameters.get("marks")
    if marks:
        unit = f"{ctx.task_id}-{ctx.attempt}" + (f"-i{ctx.item_index}" if ctx.item_index is not None else "")
        Path(marks, f"{unit}.{what}").write_text(threading.current_thread().name)


@kinds.command()
async def wait(ctx: CommandContext) -> dict:
    """Awaits the file `gate` (if given), then `seconds` (on attempt `slow_attempt` only, if
    given); notes a cancellation."""
    mark(ctx, "started")
    slow_attempt, gate = ctx.parameters.get("slow_attempt"), ctx.parameters.get("gate")
    seconds = float(ctx.parameters.get("seconds", 0.1))
    try:
        while gate and not Path(gate).exists():
            await asyncio.sleep(0.2)
        if slow_attempt is None or slow_attempt == ctx.attempt:
            await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        mark(ctx, "cancelled")
        raise
    return {"waited": seconds, "attempt": ctx.attempt, "thread": threading.current_thread().name}


@kinds.command(kind="thread")
def block(ctx: CommandContext) -> dict:
    """Blocks its thread for `seconds`, as a blocking client library would."""
    mark(ctx, "started")
    seconds = float(ctx.parameters.get("seconds", 0.1))
    time.sleep(seconds)
    return {"blocked": seconds, "thread": threading.current_thread().name}


@kinds.command()
async def offload(ctx: CommandContext) -> dict:
    """Hands a blocking call to the loop's default executor, as the guide says to: the call
    waits for the file `gate`, and answers the name of the thread it ran on."""
    mark(ctx, "started")

    def blocking() -> str:
        while not Path(ctx.parameters["gate"]).exists():
            time.sleep(0.05)
        return threading.current_thread().name

    return {"ran_on": await asyncio.get_running_loop().run_in_executor(None, blocking)}


@kinds.command()
async def fenced_write(ctx: CommandContext) -> dict:
    """Waits until an operator stopped its run (its attempt is then stale), then checks its fence
    before its side effect: marks `refused`, or `wrote` had the fence let it through. It sits
    out its cancellation (the lost lease's) to reach the check either way: the fence, not the
    cancel, is what this command exercises."""
    mark(ctx, "started")
    refused = None
    while refused is None:
        try:
            task = await asyncio.get_running_loop().run_in_executor(None, ctx.read_task, ctx.task_id)
            if task is not None and task.run(ctx.dispatch_id) is not None:
                await asyncio.sleep(0.05)
                continue
            refused = await _fence_refuses(ctx)
        except asyncio.CancelledError:
            mark(ctx, "cancelled")  # one cancel comes, for the lost lease; carry on to the check
    mark(ctx, "refused" if refused else "wrote")
    return {"wrote": not refused}


async def _fence_refuses(ctx: CommandContext) -> bool:
    try:
        await ctx.check_fence_async()
    except StaleFence:
        return True
    return False


@kinds.command()
async def poll(ctx: CommandContext) -> dict:
    """Not done until asked `polls` times (counted from the task's own history)."""
    task = await asyncio.get_running_loop().run_in_executor(None, ctx.read_task, ctx.task_id)
    done = sum(1 for e in task.History if e.Event == "check_again" and e.Cursor == ctx.cursor)
    polls = int(ctx.parameters.get("polls", 3))
    if done < polls:
        return check_again(float(ctx.parameters.get("interval", 0.2)), f"{done + 1} of {polls} checks")
    return {"polled": done}


@kinds.command()
async def tell_secret(ctx: CommandContext) -> dict:
    """Writes its secret parameter into log lines, structlog's and the standard library's."""
    secret = ctx.parameters["password"]
    await asyncio.sleep(0)
    log.info("async command logging its secret", value=secret, note=f"the password is {secret}")
    logging.getLogger("kinds.async").warning("stdlib line with %s inside", secret)
    return {}


@kinds.command(kind="thread")
def tell_secret_in_thread(ctx: CommandContext) -> dict:
    secret = ctx.parameters["password"]
    log.info("thread command logging its secret", value=secret, note=f"the password is {secret}")
    logging.getLogger("kinds.thread").warning("stdlib line with %s inside", secret)
    return {}


@kinds.command(kind="thread")
def hang(ctx: CommandContext) -> dict:
    """Never returns: a call hung where no timeout reaches it."""
    while True:
        time.sleep(3600)


@kinds.command()
async def hang_handoff(ctx: CommandContext) -> dict:
    """Hands off a blocking call that never returns: its timeout cancels the coroutine, the
    call's thread stays blocked."""
    await asyncio.get_running_loop().run_in_executor(None, threading.Event().wait)
    return {}


@kinds.command()
async def undo(ctx: CommandContext) -> dict:
    """Awaits the file `undo_gate` (if given): a test decides when the rollback may end."""
    gate = ctx.parameters.get("undo_gate")
    while gate and not Path(gate).exists():
        await asyncio.sleep(0.2)
    return {}


# A module mixing kinds: a process command and an async one on the same queue.
mixed = CommandRegistry("mixed")


@mixed.command()
def hold(ctx: CommandContext) -> dict:
    """A process command: holds its slot (and its child) until the file `gate` exists."""
    mark(ctx, "started")
    while not Path(ctx.parameters["gate"]).exists():
        time.sleep(0.1)
    return {"held": True}


@mixed.command("quick")
async def mixed_quick(ctx: CommandContext) -> dict:
    return {"quick": ctx.task_id}
