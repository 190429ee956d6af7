"""The `fleet` module of docs/fan-out.md's worked examples (tests/e2e/test_fan_out_budget.py):
`patch`, `unpatch`, `check_wave` and `report`, each appending one line to the ledger BATON_TEST_LEDGER names
(tests/support/ledger_file.py), so a test counts what was applied and undone from
the side effects, not from the task. A host fails through the task's `_baton_faults`."""

from common.runtime.registry import CommandContext, CommandRegistry
from tests.support.ledger_file import note

fleet = CommandRegistry("fleet")


@fleet.command()
def patch(ctx: CommandContext) -> dict:
    note(ctx, "patch")
    return {"patched": ctx.item}


@fleet.command()
def unpatch(ctx: CommandContext) -> dict:
    note(ctx, "unpatch")
    return {}


@fleet.command()
def check_wave(ctx: CommandContext) -> dict:
    """A wave's health check: it sees the wave's items; a drill fails it through `_baton_faults`."""
    note(ctx, "check", wave=ctx.parameters["wave"], items=[i["Item"] for i in ctx.parameters["items"]],
          item_count=ctx.parameters.get("item_count"), truncated=ctx.parameters.get("items_truncated"),
          failed=ctx.parameters.get("failed"), page=ctx.parameters.get("items_page"))
    return {"healthy": len(ctx.parameters["items"])}


@fleet.command()
def report(ctx: CommandContext) -> dict:
    note(ctx, "report")
    return {"reported": len(ctx.parameters.get("patch") or [])}


@fleet.command()
def hosts(ctx: CommandContext) -> dict:
    """A source of hosts a page at a time (docs/design/item-sources.md): `h0 ... h<host_count - 1>`,
    paged by index. `source_fails_at`: a page starting at that index fails for good; `hide_total`:
    the pages say nothing of the count."""
    after, size = ctx.parameters.get("page_after"), ctx.parameters["page_size"]
    count = int(ctx.parameters.get("host_count", 0))
    first = 0 if after is None else int(after)
    if ctx.parameters.get("source_fails_at") == first:
        raise RuntimeError(f"inventory unreachable at host {first}")
    last = min(first + size, count)
    page = {"items": [f"h{i}" for i in range(first, last)], "next": last if last < count else None, "total": count}
    if ctx.parameters.get("hide_total"):
        del page["total"]
    return page
