"""A command's side of a callback (common/runtime/registry.py): ctx.callback_token() registers the
token's hash before it returns the token, the same token for every call of one attempt, masked
in the command's own log lines; ctx.await_callback() answers the park, and refuses without a
token; a for_each item may not ask. Run through the command runner's own execute and call_async."""

from __future__ import annotations

import asyncio

import pytest

from common.engine.commands import token_hash
from common.runtime.child import execute
from common.runtime.invoke import call_async, command_context
from common.runtime.registry import CommandContext, CommandRegistry
from common.secrets.log_lines import masked

REQUEST = {"task_id": "t" * 32, "task_type": "change", "command": "give", "cursor": 1, "phase": 0, "attempt": 1,
           "idempotency_key": "k", "run_key": "r", "parameters": {}, "dispatch_id": "d1", "owner": "w"}


def store_reader() -> tuple[object, list]:
    """A read_task with its open_callback, recording each write it would make."""
    opened: list = []

    def read(task_id: str) -> None:
        return None

    read.open_callback = lambda *args: opened.append(args)  # type: ignore[attr-defined]
    return read, opened


def test_the_token_is_registered_first_kept_for_the_attempt_and_masked_in_its_log_lines():
    seen: list = []
    registry = CommandRegistry("tickets")

    @registry.command()
    def give(ctx: CommandContext) -> dict:
        token = ctx.callback_token()
        seen.append((token, ctx.callback_token(), masked(f"gave {token} to the board")))
        return ctx.await_callback(600, heartbeat=60)

    read, opened = store_reader()
    answer = execute(registry, dict(REQUEST), False, read_task=read)
    assert answer == {"ok": True, "message": "", "output": {}, "retryable": True, "await_callback": [600.0, 60.0]}
    token, again, line = seen[0]
    assert again == token and opened == [("t" * 32, "d1", "w", token_hash(token))]
    assert token not in line and line.startswith("gave ")


def test_an_async_command_gets_its_token_off_the_loop_and_masked_too():
    seen: list = []
    registry = CommandRegistry("tickets")

    @registry.command()
    async def give(ctx: CommandContext) -> dict:
        token = await ctx.callback_token_async()
        seen.append((token, masked(token)))
        return ctx.await_callback(600)

    read, opened = store_reader()
    context = command_context(registry, dict(REQUEST), read_task=read)
    answer = asyncio.run(call_async(registry, context, False))
    assert answer["await_callback"] == [600.0, None] and opened[0][3] == token_hash(seen[0][0])
    assert seen[0][0] not in seen[0][1]


@pytest.mark.parametrize("request_extra, problem", [
    ({}, "await_callback without a token"),
    ({"item": "h1", "item_index": 0}, "an item of a for_each step may not wait for a callback"),
])
def test_refused_without_a_token_and_for_an_item(request_extra, problem):
    registry = CommandRegistry("tickets")

    @registry.command()
    def give(ctx: CommandContext) -> dict:
        if ctx.item_index is not None:
            ctx.callback_token()
        return ctx.await_callback(600)

    read, opened = store_reader()
    answer = execute(registry, {**REQUEST, **request_extra}, False, read_task=read)
    assert answer["ok"] is False and problem in answer["message"] and answer["retryable"] is False
    assert opened == []
