"""`baton act TASK STEP ACTION --reason ...`: take an action a step's kind offers while the step
waits for people (an approval step's `approve` and `reject`), and the friendly aliases listed
in oss/cli/__init__.py (`baton approve TASK STEP`, `baton reject TASK STEP`).

The command line reaches the store itself, as an operator: it acts with the operator role, under
the name --as (by default "cli:<login name>"), which the task's history and the step record.
"""

from __future__ import annotations

import json

import click

from oss.cli import COMMAND_MODULES
from oss.cli.common import EXIT_NO_TASK, EXIT_REFUSED, EXIT_USAGE, declare_queues, fail, opened_parts, task_json
from oss.cli.ops import _default_actor

# An alias names the action it takes: `baton approve TASK STEP` is `baton act TASK STEP approve`.
# Declared where the commands are listed (oss/cli/__init__.py), one line for a kind's actions.
ALIASES = tuple(name for name, module in COMMAND_MODULES.items() if module == __name__ and name != "act")
_APPROVAL = "an approval step's"
_WHOSE = {"continue": "a for_each step's whose wave is paused: the next wave starts"}
_OPERATOR = frozenset({"read", "submit", "operator"})  # the CLI reaches the store: it acts as an operator


def _act(task_id: str, step: str, action: str, reason: str, actor: str, as_json: bool) -> None:
    from common.errors import ActionForbidden, ActionRefused, InvalidInput, UnknownStepAction, UnknownTask
    from common.secrets.task_views import masked_task
    from oss.cli.render import task_summary

    if not reason.strip():
        raise click.BadParameter("must say why", param_hint="--reason")
    with opened_parts() as parts:
        declare_queues(parts)
        try:
            task = parts.service.actions.act_on_step(task_id, step, action, actor, _OPERATOR, reason.strip())
        except (UnknownTask, UnknownStepAction) as exc:
            fail(EXIT_NO_TASK, str(exc))
        except (ActionRefused, ActionForbidden) as exc:
            fail(EXIT_REFUSED, f"{action} refused: {exc}")
        except InvalidInput as exc:
            fail(EXIT_USAGE, f"{action}: {exc}")
    click.echo(json.dumps(task_json(task), indent=2) if as_json else task_summary(masked_task(task)))


def _options(function):  # type: ignore[no-untyped-def]
    function = click.option("--json", "as_json", is_flag=True)(function)
    function = click.option("--as", "actor", default=_default_actor, show_default="cli:<login name>",
                            help="Who acts, as the history records it.")(function)  # fmt: skip
    return click.option("--reason", required=True, help="Why: recorded in the task's history.")(function)


@click.command(name="act", help="Take a step's action (an approval step's approve or reject): what the "
               "task view offers as the step's actions. STEP is its name or index. Exit 3: no such task; "
               "4: refused.")  # fmt: skip
@click.argument("task_id")
@click.argument("step")
@click.argument("action")
@_options
def act(task_id: str, step: str, action: str, reason: str, actor: str, as_json: bool) -> None:
    _act(task_id, step, action, reason, actor, as_json)


def _alias(action: str) -> click.Command:
    @click.command(name=action, help=f"`baton act TASK STEP {action}`: take the step's {action} action "
                   f"({_WHOSE.get(action, _APPROVAL)}). Exit 3: no such task; 4: refused.")  # fmt: skip
    @click.argument("task_id")
    @click.argument("step")
    @_options
    def run(task_id: str, step: str, reason: str, actor: str, as_json: bool) -> None:
        _act(task_id, step, action, reason, actor, as_json)

    return run


COMMANDS = [act, *(_alias(action) for action in ALIASES)]
