"""`baton queues move-to-quorum`: the last step of moving a running deployment from classic to
quorum queues (docs/operations/cluster.md, "From classic to quorum queues").

Every module queue flows.yaml names, and the alarm queue: the messages of the classic queue and
of its dead-letter twin go to their quorum queues (each confirmed before it is acked at the
source), then the emptied classic queues are deleted unless a process still consumes them.
Exit codes: 0 done; 1 a classic queue was kept (still consumed: run again once every process
runs with BATON_QUEUE_TYPE=quorum); 2 bad configuration; 5 the broker cannot be reached.
"""

from __future__ import annotations

import sys

import click

from oss.cli.common import settings


@click.group()
def queues() -> None:
    """RabbitMQ queues: move a classic deployment to quorum queues."""


@queues.command("move-to-quorum")
@click.option("--keep", is_flag=True, help="Leave the emptied classic queues in place.")
def move_to_quorum(keep: bool) -> None:
    """Move what the classic queues hold into the quorum queues, then delete the classic ones."""
    from common.broker.factory import move_to_quorum as move
    from common.flows import load_flows
    from common.queues import ALARM_QUEUE, module_queue

    loaded = settings(client=True)
    names = sorted({module_queue(m) for m in load_flows(loaded.flows_path).modules()} | {ALARM_QUEUE})
    result = move(loaded.broker_url, names, loaded.queue_delivery_limit, delete=not keep)
    for queue, count in sorted(result.moved.items()):
        click.echo(f"{queue}: {count} message(s) moved")
    for queue in result.deleted:
        click.echo(f"{queue}: deleted")
    for queue, why in sorted(result.kept.items()):
        click.echo(f"{queue}: kept ({why})", err=True)
    if not result.moved:
        click.echo("no classic queue found: nothing to move")
    if result.kept:
        sys.exit(1)


COMMANDS = [queues]
