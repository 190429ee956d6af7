"""The child process that runs `process` commands, so a timeout can really stop one.

Threads cannot be killed; a process can. Each worker slot of a module owns one long-lived child
that imports the module's registry once and runs one command at a time. On a timeout the parent
kills the child's whole process group (the command may have started programs of its own) and
starts a fresh child.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from common.engine.document import Task
from common.logging import configure_logging
from common.secrets.log_lines import hidden_values
from common.engine.commands import ReadItem
from common.runtime.invoke import call_sync, command_context, item_reader, store_reader
from common.store.items.open import open_item_store_for
from common.store.items.port import ItemStore
from common.runtime.registry import CommandRegistry, load_registry
from common.runtime.tether import tie_to_module
from common.store.factory import open_store
from common.store.tasks.port import TaskStore
from common.tracing.command_process import joined


def child_main(
    registry_ref: str,
    conn: Connection,
    fault_injection: bool,
    log_format: str = "console",
    log_level: str = "info",
    store_url: str | None = None,
) -> None:
    configure_logging(log_format, log_level)  # a command's log lines look like its module's
    os.setsid()  # own process group: the parent kills the command and whatever it started
    tie_to_module(conn.fileno())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    registry = load_registry(registry_ref)
    resources = registry.make_resources()
    read_task, read_item = _readers(store_url)
    if not _answer(conn, {"ready": True}):  # imports done: the parent may count this slot as available
        return
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if not _answer(conn, execute(registry, request, fault_injection, resources, read_task, read_item)):
            return


def _answer(conn: Connection, answer: dict[str, Any]) -> bool:
    """False when the module is no longer there to hear it (it died, or let this child go): the
    child then ends quietly. Its module logged what became of the step; a traceback here would
    only be noise in a log that is otherwise one JSON event a line."""
    try:
        conn.send(answer)
    except OSError:  # BrokenPipeError, ConnectionResetError: the module's end is closed
        return False
    return True


def _readers(store_url: str | None) -> tuple[Callable[[str], Task | None] | None, ReadItem | None]:
    """The store and its item records, opened on first use (a command that never checks its
    fence never connects)."""
    if store_url is None:
        return None, None
    opened: list[TaskStore] = []
    items: list[ItemStore] = []

    def store() -> TaskStore:
        if not opened:
            opened.append(open_store(store_url))
        return opened[0]

    def item_store() -> ItemStore:
        if not items:
            items.append(open_item_store_for(store()))
        return items[0]

    return store_reader(store), item_reader(item_store)


def execute(
    registry: CommandRegistry,
    request: dict[str, Any],
    fault_injection: bool,
    resources: Any = None,
    read_task: Callable[[str], Task | None] | None = None,
    read_item: ReadItem | None = None,
) -> dict[str, Any]:
    """Run one command; always answer with {"ok", "message", "output", "retryable"}, plus
    "check_again" (seconds; "message" is then its progress) when it is not done yet."""
    context = command_context(registry, request, resources, read_task, read_item)
    with joined(request.get("trace")) as spans:  # its own spans: children of the module's command span
        with hidden_values(request.get("hidden", ())):  # a command's own log lines hide the secrets too
            answer = call_sync(registry, context, fault_injection, verify=request.get("verify"))
    if spans:
        answer["spans"] = spans  # exported by the module (common/tracing/command_process.py)
    return answer
