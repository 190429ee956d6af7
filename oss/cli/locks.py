"""`baton locks`: busy lock keys, who holds each and who waits, in grant order (as
GET /api/v1/locks)."""

from __future__ import annotations

import time

import click

from oss.cli.common import echo_json, settings


@click.command()
@click.option("--key", default=None, help="Only this key.")
@click.option("--json", "as_json", is_flag=True, help="One object per key.")
def locks(key: str | None, as_json: bool) -> None:
    """Busy lock keys: limit, holders (mode, since when) and waiters (in the order they will be granted)."""
    from common.store.gates.lock.table import open_lock_store
    from common.store.gates.lock.table import LockTable
    from oss.services.lock_views import lock_view

    loaded = settings(client=True, existing_store=True)
    table = LockTable(open_lock_store(loaded.store_url, timeout_seconds=loaded.effective_store_timeout, indexes="none"))
    try:
        found = [table.get(key)] if key is not None else table.list_locks(limit=1000)
    finally:
        table.close()
    views = [lock_view(lock) for lock in found if lock is not None and not lock.idle]
    if as_json:
        echo_json([view.model_dump() for view in views])
        return
    if not views:
        click.echo("no lock is held or waited for")
        return
    now = time.time()
    for view in views:
        click.echo(f"{view.key}  {len(view.holders)}/{view.limit} held, {len(view.waiters)} waiting")
        for holder in view.holders:
            click.echo(f"  holder  {holder.task_id}  {holder.mode}, for {now - holder.since:.1f}s")
        for waiter in view.waiters:
            click.echo(f"  waiting {waiter.task_id}  {waiter.mode}, priority {waiter.priority}, for {now - waiter.since:.1f}s")


COMMANDS = [locks]
