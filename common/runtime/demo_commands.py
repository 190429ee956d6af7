"""`noop` and `noop_rollback`, served by every built-in module for the `demo` flow.

The demo exercises the whole protocol (three queues, three processes, rollbacks) without
touching a database, so a newcomer can watch it work on a bare machine.
"""

from common.runtime.registry import CommandContext, CommandRegistry


def add_demo_commands(registry: CommandRegistry) -> None:
    @registry.command("noop")
    def noop(ctx: CommandContext) -> dict:
        return {f"{ctx.module}_step_{ctx.cursor}": "done"}

    @registry.command("noop_rollback")
    def noop_rollback(ctx: CommandContext) -> dict:
        return {f"{ctx.module}_step_{ctx.cursor}": "undone"}
