"""A command that quotes a secret parameter in its error message, as careless code might."""

from common.errors import CommandFailed
from common.runtime.registry import CommandContext, CommandRegistry

registry = CommandRegistry("leaky")


@registry.command()
def connect(ctx: CommandContext) -> dict:
    raise CommandFailed(f"login refused for password {ctx.parameters['admin_password']}", retryable=False)
