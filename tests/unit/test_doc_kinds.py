"""docs/guide/modules.md "Kinds of command" example, run: each command through the same call a module makes
for its kind (common/runtime/invoke.py), the async one against a real listening socket."""

from __future__ import annotations

import asyncio
import socket
from concurrent.futures import ThreadPoolExecutor

from common.runtime.invoke import call_async, call_sync, command_context
from common.runtime.registry import CommandContext, CommandRegistry
from tests.support.doc_examples import blocks


def _registry() -> CommandRegistry:
    registry = CommandRegistry("storage")
    namespace = {"registry": registry, "CommandContext": CommandContext}
    (code,) = blocks("docs/guide/modules.md", "Kinds of command: process, thread, async", "python")
    exec(code, namespace)  # noqa: S102 - the docs' own example
    return registry


def _context(registry: CommandRegistry, command: str, parameters: dict) -> CommandContext:
    return command_context(registry, {"task_id": "t1", "task_type": "check", "command": command, "cursor": 0,
                                      "phase": 0, "attempt": 1, "idempotency_key": "t1:0:normal", "run_key": "t1",
                                      "parameters": parameters})  # fmt: skip


def _on_a_loop_of_its_own(coroutine):  # noqa: ANN001, ANN202
    """Run on a new loop in a thread of its own, as a module's event-loop thread does: this test
    process's main thread may still hold another library's loop (a browser test's driver)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_the_docs_commands_declare_their_kinds_and_run_as_them() -> None:
    registry = _registry()
    assert registry.kinds() == {"resolve_host": "thread", "wait_for_port": "async"}
    with socket.create_server(("127.0.0.1", 0)) as listening:
        port = listening.getsockname()[1]
        answer = _on_a_loop_of_its_own(call_async(
            registry, _context(registry, "wait_for_port", {"host": "127.0.0.1", "port": port}), False))
    assert answer == {"ok": True, "message": "", "output": {"port_open": port}, "retryable": True}
    answer = call_sync(registry, _context(registry, "resolve_host", {"host": "localhost"}), False)
    assert answer["ok"] and answer["output"]["address"].startswith("127.")
