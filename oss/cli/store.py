"""`baton store init` and `baton store migrate`: prepare the store's indexes, once.

On MongoDB the indexes are created by OSS at start and by `baton store init` (the missing ones
only); module processes only check them and warn, and command processes never touch them. An index
whose definition changed in a new version is reported, never silently rebuilt (that can take long
on a large collection) and never a reason to refuse to start: `baton store migrate` replaces it,
drops the ones no longer used and creates the missing ones, when the operator chooses.

SQLite brings its schema and indexes up to date whenever a process opens the file (a local file,
cheap to check), so both commands only open it.

Exit codes: 0 done (init: and every index is as this version expects); 1 init left indexes that
differ (run migrate); 2 bad configuration or the store refused a change; 5 the store cannot be
reached or opened.
"""

from __future__ import annotations

import sys

import click

from oss.cli.common import EXIT_USAGE, settings


@click.group()
def store() -> None:
    """Prepare the store: indexes (MongoDB) and schema (SQLite)."""


@store.command()
def init() -> None:
    """Create the missing indexes; report the ones that differ (see `baton store migrate`)."""
    problems = _prepare("create")
    for problem in problems:
        click.echo(f"index not as expected: {problem}")
    if problems:
        click.echo("run `baton store migrate` to replace them", err=True)
        sys.exit(1)
    click.echo("store ready")


@store.command()
def migrate() -> None:
    """Replace changed indexes, drop unused ones, create missing ones (MongoDB)."""
    loaded = settings(client=True)
    url = loaded.store_url
    if not url.startswith("mongodb"):
        _prepare("create")
        click.echo("SQLite: schema and indexes are brought up to date whenever the file is opened")
        return
    from common.errors import StoreError
    from common.store.mongo import indexes as mongo_indexes
    from common.store.factory import database_name
    from common.store.mongo.client import open_client

    client = open_client(url, loaded.effective_store_timeout)
    try:
        done = mongo_indexes.migrate_reachable(client[database_name(url)])
    except StoreError:  # unreachable, a timeout: `baton` says so (exit 5)
        raise
    except Exception as exc:  # the server refused a change: say it, change nothing more
        click.echo(f"baton: migrate stopped: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    finally:
        client.close()
    for line in done:
        click.echo(line)
    click.echo("indexes as this version expects" if not done else f"{len(done)} change(s)")


def _prepare(indexes: str) -> list[str]:
    """Open every part of the store with `indexes`; the problems left (MongoDB), [] for SQLite.
    A store that cannot be reached raises StoreError: `baton` says so (exit 5)."""
    from common.store.factory import open_store
    from common.module_hooks import module_hook
    from common.store.side_stores import open_event_log
    from common.store.items.open import open_item_store_for

    loaded = settings(client=True)
    url, timeout = loaded.store_url, loaded.effective_store_timeout
    parts = [
        open_store(url, timeout_seconds=timeout, indexes=indexes),  # type: ignore[arg-type]
        module_hook("inventory").open_inventory(url, timeout_seconds=timeout, indexes="none"),  # the resource module's
        open_event_log(url, timeout_seconds=timeout, indexes="none"),
    ]
    parts.append(open_item_store_for(parts[0]))  # SQLite: its table made now, not at a step's first item
    problems: list[str] = getattr(parts[0], "index_report", [])
    for part in parts:
        part.close()
    return problems


COMMANDS = [store]
