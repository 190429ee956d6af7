"""Stand-in resource and mysql commands for the ENGINE's end-to-end tests.

The engine tests are about the protocol (routing, retries, leases, crashes, duplicates), not about
capacity or MariaDB, so their resource and mysql modules serve these: the same command names as
the real modules, no inventory and no database. They still run as real module processes on the
real RabbitMQ, through the real runtime (see tests/support/run_registry.py).
"""

import time

from common.engine.core.check_again import check_again
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


@mysql.command()
def nap(ctx: CommandContext) -> dict:
    """A step that takes a while (tests/e2e/test_task_waits.py: a deadline passing while it runs):
    until the file `nap_gate` exists, when given (the test says when it may end), then
    `nap_seconds`."""
    import time
    from pathlib import Path

    gate = ctx.parameters.get("nap_gate")
    while gate and not Path(gate).exists():
        time.sleep(0.1)
    time.sleep(float(ctx.parameters.get("nap_seconds", 1)))
    return {"napped": True}


# Graph flows (tests/e2e/test_graph_engine.py): one command per step, so a fault rule can target
# any one step (or item), each with its own undo; both modules serve them.
def _graph_commands(registry: CommandRegistry) -> None:
    for name in ("a", "b", "c", "d", "item", "leaf"):
        def work(ctx: CommandContext, name: str = name) -> dict:
            return {f"did_{name}": True} if ctx.item_index is None else {"node": ctx.item, "index": ctx.item_index}

        def undo(ctx: CommandContext, name: str = name) -> dict:
            return {}

        registry.command(f"step_{name}")(work)
        registry.command(f"undo_{name}")(undo)


_graph_commands(resource)
_graph_commands(mysql)


# Check again later (tests/console/test_browser_check_again.py): never done, so the page can be
# looked at while the step waits; the test cancels the task.
@mysql.command()
def await_caught_up(ctx: CommandContext) -> dict:
    return check_again(0.3, "replica 73% caught up")


# Lock tests (tests/e2e/test_locks.py): a step that takes a while, so holders overlap.
def _hold(ctx: CommandContext) -> dict:
    time.sleep(float(ctx.parameters.get("hold", 0.3)))
    return {}


resource.command("hold")(_hold)
mysql.command("hold")(_hold)
