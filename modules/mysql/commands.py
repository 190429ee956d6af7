"""MySQL commands (simple stand-ins: real provisioning on MariaDB is issue 4's work)."""

from common.runtime.demo_commands import add_demo_commands
from common.runtime.registry import CommandContext, CommandRegistry

registry = CommandRegistry("mysql")
add_demo_commands(registry)


@registry.command()
def init_instance(ctx: CommandContext) -> dict:
    # Uses what check_resource put into Parameters: the steps of a task share them.
    return {"instance": {"host": ctx.parameters.get("host"), "database": f"db_{ctx.task_id[:8]}"}}


@registry.command()
def clean_instance(ctx: CommandContext) -> dict:
    return {"instance_cleaned": True}


@registry.command()
def drop_instance(ctx: CommandContext) -> dict:
    return {"instance_dropped": True}
