"""Monitor commands. `report_event` is step 0's rollback in create_mysql_instance."""

import structlog

from common.runtime.demo_commands import add_demo_commands
from common.runtime.registry import CommandContext, CommandRegistry

registry = CommandRegistry("monitor")
add_demo_commands(registry)
log = structlog.get_logger(__name__)


@registry.command()
def report_event(ctx: CommandContext) -> dict:
    log.info("event reported", what=f"{ctx.task_type} abandoned", task_id=ctx.task_id)
    return {"event_reported": True}
