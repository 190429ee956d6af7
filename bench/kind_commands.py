"""The commands of the kinds benchmark (bench/kinds.py): the same no-op as an async command and
as a process command, and an async command that awaits `seconds` (I/O it waits on)."""

from __future__ import annotations

import asyncio

from common.runtime.registry import CommandContext, CommandRegistry

asyncbench = CommandRegistry("asyncbench")
processbench = CommandRegistry("processbench")


@asyncbench.command()
async def wait(ctx: CommandContext) -> dict:
    await asyncio.sleep(float(ctx.parameters.get("seconds", 5)))
    return {}


@asyncbench.command("noop")
async def async_noop(ctx: CommandContext) -> dict:
    return {}


@processbench.command("noop")
def process_noop(ctx: CommandContext) -> dict:
    return {}
