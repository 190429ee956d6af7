"""A module whose commands do everything a careless command could to leak a secret: log it, put
it in a URL in a log line, and fail with a message that quotes it (normal phase and rollback).
baton must keep every one of those out of every output (tests/e2e/test_secrets_never_leak.py)."""

import structlog

from common.errors import CommandFailed
from common.runtime.registry import CommandContext, CommandRegistry

vault = CommandRegistry("vault")
log = structlog.get_logger(__name__)


@vault.command()
def connect(ctx: CommandContext) -> dict:
    secret = ctx.parameters["admin_password"]
    log.info("connecting", dsn=f"mysql://admin:{secret}@db:3306/app", note=f"trying {secret}")
    raise CommandFailed(f"access denied for admin using {secret} (mysql://admin:{secret}@db)", retryable=False)


@vault.command()
def disconnect(ctx: CommandContext) -> dict:
    secret = ctx.parameters["admin_password"]
    raise CommandFailed(f"cleanup failed: the server rejected password {secret}", retryable=False)
