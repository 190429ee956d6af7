"""The commands of the source benchmark (bench/source_fleet.py): `hosts`, a source of
`host_count` hosts a page at a time (paged by index, as a key-ordered listing pages), and async
`patch` / `unpatch` no-ops; `patch` fails for good the items bench.source_fleet.failing names."""

from __future__ import annotations

from common.errors import CommandFailed
from common.runtime.registry import CommandContext, CommandRegistry

sourcebench = CommandRegistry("sourcebench")


@sourcebench.command()
async def hosts(ctx: CommandContext) -> dict:
    after, size = ctx.parameters.get("page_after"), int(ctx.parameters["page_size"])
    count = int(ctx.parameters["host_count"])
    first = 0 if after is None else int(after)
    last = min(first + size, count)
    return {"items": [f"host-{i}" for i in range(first, last)], "next": last if last < count else None, "total": count}


@sourcebench.command()
async def patch(ctx: CommandContext) -> dict:
    if ctx.item_index is not None and ctx.item_index % 1000 in (0, 333, 666):  # bench.source_fleet.failing
        raise CommandFailed(f"{ctx.item} is down", retryable=False)
    return {}


@sourcebench.command()
async def unpatch(ctx: CommandContext) -> dict:
    return {}
