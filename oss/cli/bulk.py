"""`baton bulk cancel|retry|retry-rollback|pause|resume`: an operator action on every task a filter selects.

A dry run unless --apply: it counts the matching tasks and how many the action fits, writing
nothing. Exit 0 done (or dry run); 2 bad usage; 4 --apply and some tasks refused the action.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from oss.services.action_names import MAX_BULK_TASKS
from oss.cli.common import (
    EXIT_REFUSED, EXIT_USAGE, AsciiIntRange, declare_queues, fail, opened_parts, parse_labels,
    parse_status, parse_time, report_many,
)
from oss.cli.ops import _default_actor

if TYPE_CHECKING:
    from oss.services.bulk import BulkResult


def _command(action: str) -> click.Command:
    @click.command(name=action, help=f"{action} every task the filters select (a dry run unless --apply).")
    @click.option("--type", "task_type", help="Only tasks of this type.")
    @click.option("--status", help="Only tasks in this status (code or name).")
    @click.option("--user", "user_id", help="Only tasks of this owner.")
    @click.option("--label", "labels", multiple=True, help="key=value; repeat: all must match.")
    @click.option("--created-from", help="Created at or after (ISO-8601 or epoch).")
    @click.option("--created-to", help="Created before (ISO-8601 or epoch).")
    @click.option("--limit", type=AsciiIntRange(1, MAX_BULK_TASKS), default=1000, show_default=True)
    @click.option("--reason", required=True, help="Why: recorded in every task's history.")
    @click.option("--as", "actor", default=_default_actor, show_default="cli:<login name>")
    @click.option("--apply", "apply_", is_flag=True, help="Do it (without: count what would change).")
    @click.option("--json", "as_json", is_flag=True)
    def run(task_type, status, user_id, labels, created_from, created_to, limit, reason, actor, apply_, as_json) -> None:  # type: ignore[no-untyped-def]
        from common.errors import BatonError, BrokerError, StoreError
        from oss.services.bulk import BulkActions, require_a_filter

        if not reason.strip():
            raise click.BadParameter("must say why", param_hint="--reason")
        filters: dict[str, Any] = {
            "task_type": task_type, "status": parse_status(status), "user_id": user_id,
            "labels": parse_labels(labels), "created_from": parse_time(created_from, "--created-from"),
            "created_to": parse_time(created_to, "--created-to"),
        }  # fmt: skip
        try:
            require_a_filter(filters)  # before the store: a usage error whether or not it exists
        except ValueError as exc:
            fail(EXIT_USAGE, str(exc))
        with opened_parts() as parts:
            declare_queues(parts)
            bulk = BulkActions(parts.store, parts.service.actions, time.time,
                               parts.settings.redeliver_after_seconds)  # fmt: skip
            try:
                result = bulk.run(action, filters, actor=actor, reason=reason.strip(), dry_run=not apply_, limit=limit)
            except ValueError as exc:
                fail(EXIT_USAGE, str(exc))
            except (StoreError, BrokerError):
                raise  # the store or broker went away: `baton` says so, with its own exit code
            except BatonError as exc:
                fail(EXIT_USAGE, str(exc))
        _report(result, as_json)
        if apply_ and result.refused:
            raise SystemExit(EXIT_REFUSED)

    return run


def _report(result: BulkResult, as_json: bool) -> None:
    verb = "would apply to" if result.dry_run else "applied to"
    more = " (more match: raise --limit)" if result.truncated else ""
    summary = f"{result.action}: {result.matched} tasks match{more}; {verb} {len(result.applied)}, {len(result.refused)} refused"
    fields = {"action": result.action, "dry_run": result.dry_run, "matched": result.matched,
              "applied": result.applied, "truncated": result.truncated}  # fmt: skip
    report_many(as_json, fields, summary, result.refused, dry_run=result.dry_run, changes=len(result.applied))


@click.group()
def bulk() -> None:
    """Operator actions by filter, with a dry run first."""


for _action in ("cancel", "retry", "retry-rollback", "pause", "resume"):
    bulk.add_command(_command(_action))

COMMANDS = [bulk]
