"""`baton cancel | retry | retry-rollback | compensate`: operator actions from the command line.

The actor recorded in the task's history is --as, by default "cli:<login name>".
"""

from __future__ import annotations

import getpass
import json

import click

from common.errors import ActionRefused, InvalidInput, UnknownTask
from common.masking import masked_task
from oss.actions import ACTIONS
from oss.cli_common import EXIT_NO_TASK, EXIT_REFUSED, EXIT_USAGE, fail, opened_parts, task_json
from oss.render import task_summary

_HELP = {
    "cancel": "Cancel a task: the running step finishes, then everything done is rolled back.",
    "retry": "Run a ROLLED_BACK task again, from step 0 and its submitted parameters.",
    "retry-rollback": "Retry the rollback step that failed (ROLLBACK_FAILED task).",
    "compensate": "Mark the failed rollback step undone by hand; the rollback continues.",
}


def _default_actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # noqa: BLE001  (getpass raises several kinds when there is no login name)
        return "cli"


def _command(action: str) -> click.Command:
    @click.command(name=action, help=_HELP[action] + " Exit 3: no such task; 4: refused.")
    @click.argument("task_id")
    @click.option("--reason", required=True, help="Why: recorded in the task's history.")
    @click.option("--as", "actor", default=_default_actor, show_default="cli:<login name>",
                  help="Who acts, as the history records it.")  # fmt: skip
    @click.option("--json", "as_json", is_flag=True)
    @click.option("--stop-running", is_flag=True, hidden=action != "cancel",
                  help="Stop claimed steps now instead of letting them finish (they are rolled back).")
    def run(task_id: str, reason: str, actor: str, as_json: bool, stop_running: bool) -> None:
        if stop_running and action != "cancel":
            raise click.BadParameter("applies to cancel only", param_hint="--stop-running")
        if not reason.strip():
            raise click.BadParameter("must say why", param_hint="--reason")
        with opened_parts() as parts:
            parts.service.declare_queues()
            try:
                task = parts.service.actions.apply(action, task_id, actor, reason.strip(), stop_running=stop_running)
            except UnknownTask as exc:
                fail(EXIT_NO_TASK, str(exc))
            except ActionRefused as exc:
                fail(EXIT_REFUSED, f"{action} refused: {exc}")
            except InvalidInput as exc:
                fail(EXIT_USAGE, f"{action}: {exc}")
        click.echo(json.dumps(task_json(task), indent=2) if as_json else task_summary(masked_task(task)))

    return run


COMMANDS = [_command(action) for action in ACTIONS]
