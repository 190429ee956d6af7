"""`baton reconcile`: list (and with --apply, remove) what the modules' records say belongs to a
task that ended rolled back; report successful tasks whose instance is missing.

Reads BATON_STORE_URL (tasks), BATON_RESOURCE_INVENTORY_URL (reservations) and BATON_MYSQL_*
(databases and users), like the processes that wrote them.
"""

from __future__ import annotations

import json

import click

from oss.cli.common import EXIT_TASK_FAILED, EXIT_USAGE, fail, settings
from oss.cli.ops import _default_actor as default_actor

EXIT_PARTIAL = EXIT_TASK_FAILED


@click.command()
@click.option("--apply", "apply_", is_flag=True, help="Remove what the dry run lists (default: list only).")
@click.option("--reason", default="baton reconcile --apply", show_default=True,
              help="Why: logged with each removal and recorded in the task's history.")
@click.option("--as", "actor", default=default_actor, show_default="cli:<login name>",
              help="Who acts, as the log and the task's history record it.")
@click.option("--json", "as_json", is_flag=True)
def reconcile(apply_: bool, reason: str, actor: str, as_json: bool) -> None:
    """Find leaks of rolled-back tasks (databases, users, reservations) and successful tasks whose
    instance is missing. A dry run unless --apply; an instance of a successful, running or
    rollback-failed task is never touched. Exit 1: a part could not be read or an action failed."""
    from common.errors import InvalidInput
    from common.input_limits import check_input
    from common.module_hooks import module_hook, module_hooks
    from common.store.factory import open_store

    loaded = settings()
    try:
        check_input(loaded.input_limits, ("actor",), reason=reason, actor=actor)  # both go into the tasks' history
    except InvalidInput as exc:
        fail(EXIT_USAGE, str(exc))
    makers = module_hooks("reconciler")  # the mysql module's (modules/mysql/hooks.py)
    if not makers:
        fail(EXIT_USAGE, "no module of this checkout offers a reconciler")
    store = open_store(loaded.store_url)
    inventory = module_hook("inventory").open_configured_inventory(loaded)  # the resource module's
    try:
        try:
            reconciler = makers[0](store, inventory, actor)
        except Exception as exc:  # noqa: BLE001  (ConfigError: a bad BATON_MYSQL_* setting)
            fail(EXIT_USAGE, str(exc))
        survey = reconciler.survey()
        outcomes = reconciler.apply(survey.plan.actions, reason) if apply_ else []
    finally:
        inventory.close()
        store.close()
    failed = bool(survey.problems) or any(not o.done for o in outcomes)
    if as_json:
        click.echo(json.dumps({
            "applied": apply_,
            "actions": [{**a.__dict__, **_outcome(outcomes, a)} for a in survey.plan.actions],
            "findings": [f.__dict__ for f in survey.plan.findings],
            "problems": survey.problems,
        }, indent=2))  # fmt: skip
    else:
        for problem in survey.problems:
            click.echo(f"could not read: {problem}")
        for action in survey.plan.actions:
            verb = {"remove_instance": "remove", "restore_reservation": "restore"}[action.kind]
            done = _outcome(outcomes, action)
            status = f" -> {done['note']}" if done else " (dry run: --apply to do it)"
            click.echo(f"{verb} {action.target}: {action.why}{status}")
        for finding in survey.plan.findings:
            click.echo(f"report {finding.kind}: {finding.why}")
        if not survey.plan.actions and not survey.plan.findings:
            click.echo("nothing to reconcile")
    if failed:
        raise SystemExit(EXIT_PARTIAL)


def _outcome(outcomes: list, action: object) -> dict:
    for outcome in outcomes:
        if outcome.action is action:
            return {"done": outcome.done, "note": outcome.note}
    return {}


COMMANDS = [reconcile]
