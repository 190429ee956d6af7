"""Monitor commands. `report_event` records an event in the event log beside the task store:
create_mysql_instance announces itself with it, and records with its rollback that it was
abandoned."""

from __future__ import annotations

import time

import structlog

from common.runtime.demo_commands import add_demo_commands
from common.runtime.registry import CommandContext, CommandRegistry
from common.settings import load_settings
from common.store.side.events import EventLog
from common.store.side_stores import open_event_log
from modules.monitor.events import event_for

registry = CommandRegistry("monitor")
add_demo_commands(registry)
log = structlog.get_logger(__name__)


@registry.setup
def open_events() -> EventLog:
    """Once per process (the module's, for its thread commands): the event log they share."""
    settings = load_settings()
    # A command child never creates indexes (OSS does, once): see common.store.mongo.indexes.
    return open_event_log(settings.store_url, timeout_seconds=settings.effective_store_timeout, indexes="none")


# One insert into the event log: blocking I/O through the store's own client, bounded by the
# store timeout (MongoDB) or the busy timeout (SQLite), with nothing to hang in C. A thread of the
# module process runs it with the shared event log instead of a child process forked per event.
# Not async: the event log's clients are blocking ones.
@registry.command(kind="thread")
def report_event(ctx: CommandContext) -> dict:
    events: EventLog = ctx.resources
    event = event_for(ctx, time.time())
    if events.record(event):
        log.info("event reported", kind=event.Kind, what=event.Message)
    return {"last_event": {"id": event.EventId, "kind": event.Kind}}
