"""The `baton` command: submit, inspect, follow and act on tasks; check flows.yaml; start the
processes (OSS with its REST API, a module, the sweeper, the all-in-one demo); manage the
resource inventory's hosts (`baton hosts`, oss/cli/hosts.py); schedules (`baton schedules`); find
and remove what rolled-back tasks leaked (`baton reconcile`, oss/cli/reconcile.py); prepare the
store's indexes (`baton store init|migrate`, oss/cli/store.py).

Task commands talk to the store directly, configured like every process (BATON_* variables).
Most take --json for scripts: the task document, secrets masked like everywhere.

Each command (or group of commands) is a module of this folder, beside what they share
(`common.py`), how a task is shown on a terminal (`render.py`, `plan_text.py`) and the
processes `baton oss|sweeper|module|up` run (`processes.py`, `embedded.py`). What the CLI and
the REST API both do is in oss/services/.

Every command starts fast: the group names each command's module and imports it only when the
command runs (or when --help lists it: the command modules import nothing heavy at their top, each
command imports what it needs inside its function). tests/unit/test_cli_imports.py holds that.

Exit codes (docs/reference/cli.md):
  0  done; for `watch` and `submit --wait`: the task succeeded
  1  the task ended failed: ROLLED_BACK or ROLLBACK_FAILED (`watch`, `submit --wait`)
  2  bad usage or configuration, or parameters that do not fit the task type (nothing changed)
  3  no such task
  4  an operator action that does not fit the task's state (cancel a finished task, ...)
  5  the store or the broker cannot be reached or opened: try again later
"""

from __future__ import annotations

import importlib

import click

from common.errors import BatonError, BrokerError, DuplicateSchedule, DuplicateTask, StoreError
from oss.cli.common import EXIT_UNAVAILABLE, EXIT_USAGE, fail

# Each command and the module that defines it (in the module's COMMANDS).
COMMAND_MODULES = {
    **dict.fromkeys(("submit", "get", "list", "watch"), "oss.cli.tasks"),
    **dict.fromkeys(("cancel", "retry", "retry-rollback", "compensate", "pause", "resume", "redrive", "rollback", "skip"), "oss.cli.ops"),
    **dict.fromkeys(("oss", "check-flows", "module", "sweeper", "up", "demo"), "oss.cli.serve"),
    **dict.fromkeys(("act", "approve", "reject", "continue"), "oss.cli.act"),  # a step's actions; approval, wave aliases
    "callback": "oss.cli.callback",  # another system's callback of a step that waits for it
    "hosts": "oss.cli.hosts",
    "schedules": "oss.cli.schedules",
    "bulk": "oss.cli.bulk",
    "migrate": "oss.cli.migrate",
    "reconcile": "oss.cli.reconcile",
    "store": "oss.cli.store",
    "modules": "oss.cli.modules",
    "locks": "oss.cli.locks",
    "queues": "oss.cli.queues",
    "flows": "oss.cli.flows",
}


class LazyGroup(click.Group):
    """Imports a command's module when the command is asked for; turns the errors every command
    may meet (the store or broker down, a bad setting) into one line and an exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if module is None:
            return None
        commands = {c.name: c for c in importlib.import_module(module).COMMANDS}
        return commands[cmd_name]

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (DuplicateTask, DuplicateSchedule) as exc:  # the store answered: a name or id is taken
            fail(EXIT_USAGE, _one_line(exc))
        except StoreError as exc:
            fail(EXIT_UNAVAILABLE, f"the store cannot be reached or opened: {_one_line(exc)}")
        except BrokerError as exc:
            fail(EXIT_UNAVAILABLE, f"the broker cannot be reached: {_one_line(exc)}")
        except BatonError as exc:  # ConfigError and the like: the settings or the input
            fail(EXIT_USAGE, _one_line(exc))


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib import metadata  # here: its import costs every other command's start

    try:
        version = metadata.version("baton")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        version = "unknown (not installed: run from a checkout)"
    click.echo(f"baton {version}")
    ctx.exit()


@click.group(cls=LazyGroup)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Print baton's version and exit.")
def main() -> None:
    """baton: crash-safe multi-step operations with rollback."""


__all__ = ["COMMAND_MODULES", "main"]

