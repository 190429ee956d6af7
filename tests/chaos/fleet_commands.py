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

Where BATON_TEST_REDRIVE_GATE names a path, `apply` waits while `<path>.held` exists and
`<path>.open` does not: the scenario holds the work a redrive starts until it has killed a replica
under it, however fast this machine would otherwise finish that work.

Where BATON_TEST_EFFECTS names a directory, `apply`/`undo` keep their effect once per idempotency
key, as a real module keeps it (a file created with O_EXCL): the line then says whether this run
made the effect (`made`) or found it made by an earlier run of the same unit. `check_wave` is a
wave's health check (it notes the wave and its items).
"""

from __future__ import annotations

import asyncio
import os
import time

from common.runtime.registry import CommandContext, CommandRegistry
from tests.support import ledger_file

fleet = CommandRegistry("fleet")


def note(ctx: CommandContext, op: str, **extra: object) -> None:
    ledger_file.note(ctx, op, phase=ctx.phase.label, attempt=ctx.attempt, **extra)


def effect(ctx: CommandContext, op: str) -> dict:
    """`{"made": ...}` where effects are kept once per idempotency key, else nothing."""
    folder = os.environ.get("BATON_TEST_EFFECTS")
    return {"made": ledger_file.keep_effect(ctx, op, folder)} if folder else {}


def _await_redrive_gate() -> None:
    gate = os.environ.get("BATON_TEST_REDRIVE_GATE")
    if gate and os.path.exists(f"{gate}.held"):
        while not os.path.exists(f"{gate}.open"):
            time.sleep(0.1)


@fleet.command()
def apply(ctx: CommandContext) -> dict:
    _await_redrive_gate()
    time.sleep(float(ctx.parameters.get("work_seconds", 0)))  # the work a kill may cut short
    note(ctx, "apply", **effect(ctx, "apply"))
    return {"applied": ctx.item_index if ctx.item_index is not None else ctx.cursor}


@fleet.command()
def undo(ctx: CommandContext) -> dict:
    note(ctx, "undo", **effect(ctx, "undo"))
    return {}


@fleet.command()
def check_wave(ctx: CommandContext) -> dict:
    items = [entry["Item"] for entry in ctx.parameters.get("items", [])]
    note(ctx, "check", wave=ctx.parameters.get("wave"), items=items)
    return {"checked": len(items)}


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
