"""`baton migrate --type T --to V`: move the tasks of a type in flight to the revision
flows.yaml holds now (docs/flow-versions.md).

A dry run unless --apply: it lists what would move and what cannot without doubt, writing
nothing. Exit 0 done (or dry run); 2 bad usage; 4 --apply and some tasks were refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from oss.services.action_names import MAX_BULK_TASKS
from oss.cli.common import (
    EXIT_REFUSED, EXIT_USAGE, AsciiIntRange, declare_queues, fail, opened_parts, report_many,
)
from oss.cli.ops import _default_actor

if TYPE_CHECKING:
    from oss.services.migrations import MigrationResult


@click.command(name="migrate", help="Move the tasks of a type in flight to the revision flows.yaml holds now "
                                    "(a dry run unless --apply).")  # fmt: skip
@click.option("--type", "task_type", required=True, help="The task type.")
@click.option("--to", "to", required=True, help="The revision: its flows.yaml `version:` or its content hash.")
@click.option("--reason", required=True, help="Why: recorded in every moved task's history.")
@click.option("--limit", type=AsciiIntRange(1, MAX_BULK_TASKS), default=1000, show_default=True)
@click.option("--as", "actor", default=_default_actor, show_default="cli:<login name>")
@click.option("--apply", "apply_", is_flag=True, help="Do it (without: say what would move).")
@click.option("--json", "as_json", is_flag=True)
def migrate(task_type: str, to: str, reason: str, limit: int, actor: str, apply_: bool, as_json: bool) -> None:
    import time

    from common.errors import InvalidInput
    from oss.services.migrations import Migrations

    if not reason.strip():
        raise click.BadParameter("must say why", param_hint="--reason")
    with opened_parts() as parts:
        if apply_:
            declare_queues(parts)  # a moved task may dispatch a step at once
        migrations = Migrations(parts.store, parts.flows, parts.service.actions, time.time,
                                parts.settings.redeliver_after_seconds)  # fmt: skip
        parts.store.ping()  # a store that is down says so before the flows are looked at
        try:
            result = migrations.run(task_type, to, actor=actor, reason=reason.strip(), dry_run=not apply_, limit=limit)
        except InvalidInput as exc:
            fail(EXIT_USAGE, f"migrate: {exc}")
        except ValueError as exc:
            fail(EXIT_USAGE, str(exc))
    _report(result, as_json)
    if apply_ and result.refused:
        raise SystemExit(EXIT_REFUSED)


def _report(result: MigrationResult, as_json: bool) -> None:
    target = f"version {result.to_version} ({result.to_hash})" if result.to_version else result.to_hash
    verb = "would move" if result.dry_run else "moved"
    more = " (more in flight: raise --limit)" if result.truncated else ""
    summary = (f"{result.task_type} -> {target}: {result.matched} tasks in flight{more}; {verb} "
               f"{len(result.moved)}, {len(result.current)} on it already, {len(result.refused)} refused")  # fmt: skip
    fields = {"task_type": result.task_type, "to_hash": result.to_hash, "to_version": result.to_version,
              "dry_run": result.dry_run, "matched": result.matched, "moved": result.moved,
              "current": result.current, "truncated": result.truncated}  # fmt: skip
    report_many(as_json, fields, summary, result.refused, dry_run=result.dry_run, changes=len(result.moved), named=20)


COMMANDS = [migrate]
