"""The `fleet` module of the fleet chaos scenario (tests/chaos/test_fleet_faults.py), served by
`python -m tests.support.run_registry tests.chaos.fleet_commands:fleet` through the real runtime.

Every command makes its side effect by appending one line to the ledger file BATON_TEST_LEDGER
names, as its last act (one write with O_APPEND: lines of concurrent processes never
interleave, and a process killed before the write left no effect). The line names the unit
(task, step, item), the phase, the attempt and the process: the scenario counts from it which
units were applied and undone, and how often, independently of the task documents.

`apply`/`undo` are `process` commands (a command child each: the for_each items); the others
are `async` (a coroutine on the module's event loop) that await a gate file and `seconds` first,
so hundreds of them are in flight at once in one module process.
"""

from __future__ import annotations

import asyncio
import json
import os
import time

from common.runtime.registry import CommandContext, CommandRegistry

fleet = CommandRegistry("fleet")


def note(ctx: CommandContext, op: str) -> None:
    line = json.dumps({"op": op, "task": ctx.task_id, "cursor": ctx.cursor, "item": ctx.item_index,
                       "phase": ctx.phase.label, "attempt": ctx.attempt, "pid": os.getpid(),
                       "time": time.time()}) + "\n"
    fd = os.open(os.environ["BATON_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@fleet.command()
def apply(ctx: CommandContext) -> dict:
    note(ctx, "apply")
    return {"applied": ctx.item_index if ctx.item_index is not None else ctx.cursor}


@fleet.command()
def undo(ctx: CommandContext) -> dict:
    note(ctx, "undo")
    return {}


async def _await_then_note(ctx: CommandContext, op: str) -> dict:
    """Awaits the file `gate` (if given: the scenario holds hundreds in flight at once this
    way), then `seconds`; then makes the effect."""
    gate = ctx.parameters.get("gate")
    while gate and not os.path.exists(gate):
        await asyncio.sleep(0.25)
    await asyncio.sleep(float(ctx.parameters.get("seconds", 0.5)))
    note(ctx, op)
    return {}


@fleet.command()
async def await_apply(ctx: CommandContext) -> dict:
    return await _await_then_note(ctx, "apply")


@fleet.command()
async def await_confirm(ctx: CommandContext) -> dict:
    return await _await_then_note(ctx, "apply")


@fleet.command()
async def await_undo(ctx: CommandContext) -> dict:
    return await _await_then_note(ctx, "undo")
