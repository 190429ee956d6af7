"""Stand-in resource and mysql commands for the ENGINE's end-to-end tests.

The engine tests are about the protocol (routing, retries, leases, crashes, duplicates), not about
capacity or MariaDB, so their resource and mysql modules serve these: the same command names as
the real modules, no inventory and no database. They still run as real module processes on the
real RabbitMQ, through the real runtime (see tests/support/run_registry.py).
"""

from common.runtime.demo_commands import add_demo_commands
from common.runtime.registry import CommandContext, CommandRegistry

resource = CommandRegistry("resource")
mysql = CommandRegistry("mysql")
add_demo_commands(resource)
add_demo_commands(mysql)


@resource.command()
def check_resource(ctx: CommandContext) -> dict:
    return {"host": "host-1", "reservation_id": ctx.idempotency_key}


@resource.command()
def deduct_resource(ctx: CommandContext) -> dict:
    return {"deducted_reservation": ctx.parameters.get("reservation_id")}


@resource.command()
def restore_resource(ctx: CommandContext) -> dict:
    return {"restored_reservation": ctx.parameters.get("reservation_id")}


@mysql.command()
def init_instance(ctx: CommandContext) -> dict:
    return {"instance": {"host": ctx.parameters.get("host"), "database": f"db_{ctx.task_id[:8]}"}}


@mysql.command()
def clean_instance(ctx: CommandContext) -> dict:
    return {"instance_cleaned": True}


@mysql.command()
def drop_instance(ctx: CommandContext) -> dict:
    return {"dropped": True}
