"""Resource commands (simple stand-ins: the real inventory is issue 4's work).

They already follow the contract every command must: results go back into Parameters for the
later steps, and the idempotency key makes a re-run return the same answer.
"""

from common.runtime.demo_commands import add_demo_commands
from common.runtime.registry import CommandContext, CommandRegistry

registry = CommandRegistry("resource")
add_demo_commands(registry)


@registry.command()
def check_resource(ctx: CommandContext) -> dict:
    return {"host": "host-1", "reservation_id": ctx.idempotency_key}


@registry.command()
def deduct_resource(ctx: CommandContext) -> dict:
    return {"deducted_reservation": ctx.parameters.get("reservation_id")}


@registry.command()
def restore_resource(ctx: CommandContext) -> dict:
    return {"restored_reservation": ctx.parameters.get("reservation_id")}


@registry.command()
def release_resource(ctx: CommandContext) -> dict:
    return {"released": True}
