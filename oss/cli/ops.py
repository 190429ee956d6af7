"""`baton cancel | retry | retry-rollback | compensate | pause | resume | redrive | rollback | skip`: operator actions from the command line.

The actor recorded in the task's history is --as, by default "cli:<login name>".
"""

from __future__ import annotations

import getpass
import json

import click

from oss.services.action_names import ACTION_NAMES, SKIP
from oss.cli.common import (
    AsciiIndex, EXIT_NO_TASK, EXIT_REFUSED, EXIT_USAGE, declare_queues, fail, opened_parts,
    task_json,
)

_HELP = {
    "cancel": "Cancel a task: the running step finishes, then everything done is rolled back.",
    "retry": "Run a ROLLED_BACK task again, from step 0 and its submitted parameters.",
    "retry-rollback": "Retry the rollback step that failed (ROLLBACK_FAILED task).",
    "compensate": "Mark the failed rollback step undone by hand; the rollback continues.",
    "pause": "Pause a task: no new step starts (claimed ones finish) until it is resumed.",
    "resume": "Resume a paused task: what became ready is dispatched.",
    "redrive": ("Redrive a task held by a failure: its failed items run again, then the ones never started; "
                "what succeeded never runs again."),
    "rollback": "Roll back a task held by a failure: every applied unit is rolled back.",
    "skip": ("Skip a failed step (--step N, --item I of a for_each step): the flow goes on as if it "
             "succeeded. A RUNNING task: a step that keeps failing; a ROLLED_BACK task: it runs again "
             "with the step that failed skipped."),
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
    @click.option("--step", "cursor", type=AsciiIndex(), required=action == SKIP, hidden=action != SKIP,
                  help="The step's index (skip only).")
    @click.option("--item", type=AsciiIndex(), hidden=action != SKIP, help="A for_each step's item (skip only).")
    def run(task_id: str, reason: str, actor: str, as_json: bool, stop_running: bool, cursor: int | None,
            item: int | None) -> None:  # fmt: skip
        from common.errors import ActionRefused, InvalidInput, UnknownTask
        from common.secrets.task_views import masked_task
        from oss.cli.render import task_summary

        if (cursor is not None or item is not None) and action != SKIP:
            raise click.BadParameter("applies to skip only", param_hint="--step/--item")
        if stop_running and action != "cancel":
            raise click.BadParameter("applies to cancel only", param_hint="--stop-running")
        if not reason.strip():
            raise click.BadParameter("must say why", param_hint="--reason")
        with opened_parts() as parts:
            declare_queues(parts)
            try:
                task = parts.service.actions.apply(action, task_id, actor, reason.strip(), stop_running=stop_running,
                                                   unit=(cursor, item) if cursor is not None else None)  # fmt: skip
            except UnknownTask as exc:
                fail(EXIT_NO_TASK, str(exc))
            except ActionRefused as exc:
                fail(EXIT_REFUSED, f"{action} refused: {exc}")
            except (InvalidInput, ValueError) as exc:
                fail(EXIT_USAGE, f"{action}: {exc}")
        click.echo(json.dumps(task_json(task), indent=2) if as_json else task_summary(masked_task(task)))

    return run


COMMANDS = [_command(action) for action in (*ACTION_NAMES, SKIP)]
