"""The `baton` command: submit, inspect, follow and act on tasks; check flows.yaml; start the
processes (OSS with its REST API, a module, the sweeper, the all-in-one demo); manage the
resource inventory's hosts (`baton hosts`, oss/cli_hosts.py); schedules (`baton schedules`); find and
remove what rolled-back tasks leaked (`baton reconcile`, oss/cli_reconcile.py); prepare the store's
indexes (`baton store init|migrate`, oss/cli_store.py).

Task commands talk to the store directly, configured like every process (BATON_* variables).
Most take --json for scripts: the task document, secrets masked like everywhere.

Exit codes:
  0  done; for `watch` and `submit --wait`: the task succeeded
  1  the task ended failed: ROLLED_BACK or ROLLBACK_FAILED (`watch`, `submit --wait`)
  2  bad usage or configuration, or parameters that do not fit the task type (nothing changed)
  3  no such task
  4  an operator action that does not fit the task's state (cancel a finished task, ...)
"""

from __future__ import annotations

import sys

import click

from common.errors import BatonError
from oss import cli_ops, cli_serve
from oss.cli_bulk import bulk
from oss.cli_common import EXIT_USAGE
from oss.cli_hosts import hosts
from oss.cli_locks import locks
from oss.cli_modules import modules
from oss.cli_reconcile import reconcile
from oss.cli_schedules import schedules
from oss.cli_store import store
from oss.cli_tasks import get, list_tasks, parse_assignments, submit, watch

__all__ = ["main", "parse_assignments"]


@click.group()
def main() -> None:
    """baton: crash-safe multi-step operations with rollback."""


for _command in (submit, get, list_tasks, watch, *cli_ops.COMMANDS, *cli_serve.COMMANDS, hosts, schedules, bulk,
                 reconcile, store, modules, locks):
    main.add_command(_command)


if __name__ == "__main__":
    try:
        main()
    except BatonError as exc:
        click.echo(f"baton: {exc}", err=True)
        sys.exit(EXIT_USAGE)
