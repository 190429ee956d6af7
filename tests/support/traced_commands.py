"""Three stand-in modules for the tracing tests, one per kind of command: `tracea` runs its
commands in command processes, `traceb` in threads, `tracec` as coroutines. Every command opens
a span of its own through OpenTelemetry's usual API (as a user's command would), and carelessly
puts the task's password in it (an attribute, an event, the span's name): the runtime must mask
it before any exporter sees it."""

from __future__ import annotations

import asyncio
import time

import structlog
from opentelemetry import trace

from common.runtime.registry import CommandContext, CommandRegistry

alpha = CommandRegistry("tracea")
beta = CommandRegistry("traceb")
gamma = CommandRegistry("tracec")
tracer = trace.get_tracer("tests.traced_commands")
log = structlog.get_logger(__name__)


def _own_span(ctx: CommandContext) -> None:
    password = str(ctx.parameters.get("password", ""))
    with tracer.start_as_current_span(f"inner {ctx.command} {password}") as span:
        span.set_attribute("note", f"connecting with {password}")
        span.set_attribute("idempotency_key", ctx.idempotency_key)
        span.add_event("login", {"password": password, "dsn": f"mysql://root:{password}@db/x"})
        log.info("inner work", command=ctx.command)


@alpha.command()
def prepare(ctx: CommandContext) -> dict:
    _own_span(ctx)
    time.sleep(float(ctx.parameters.get("seconds", 0)))  # long enough to be killed in
    return {"prepared": True}


@alpha.command()
def unprepare(ctx: CommandContext) -> dict:
    _own_span(ctx)
    return {}


@beta.command(kind="thread")
def touch_host(ctx: CommandContext) -> dict:
    _own_span(ctx)
    return {}


@beta.command(kind="thread")
def untouch_host(ctx: CommandContext) -> dict:
    _own_span(ctx)
    return {}


@gamma.command()
async def finish(ctx: CommandContext) -> dict:
    await asyncio.sleep(0)
    _own_span(ctx)
    return {}


@gamma.command()
async def child_step(ctx: CommandContext) -> dict:
    await asyncio.sleep(0)
    _own_span(ctx)
    return {}


@gamma.command()
async def undo_child_step(ctx: CommandContext) -> dict:
    _own_span(ctx)
    return {}
