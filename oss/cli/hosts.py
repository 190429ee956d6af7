"""`baton hosts ...`: the resource inventory's hosts from the command line.

Exit codes as for the rest of the CLI: 0 done; 2 bad usage or a refused change (the message says
why); 3 no such host.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from oss.cli.common import AsciiFloatRange, AsciiIntRange, EXIT_NO_TASK, EXIT_USAGE, fail, settings

if TYPE_CHECKING:
    from modules.resource.inventory import Host
    from oss.services.hosts import HostsService


def _service(creates: bool) -> HostsService:
    """Only `hosts add` may create the store (a first host before anything runs)."""
    from oss.services.hosts import HostsService

    loaded = settings(client=True, existing_store=not creates)
    return HostsService.open(loaded, indexes="none")  # OSS and `baton store init` create them


def _line(host: Host) -> str:
    cap, used = host.capacity, host.used
    return (
        f"{host.name:<24} {host.state.value:<9} cpu {used.cpu}/{cap.cpu}  "
        f"memory {used.memory_mb}/{cap.memory_mb} MB  storage {used.storage_gb}/{cap.storage_gb} GB"
    )


def _run(action, as_json: bool, creates: bool = False) -> None:  # type: ignore[no-untyped-def]
    from oss.services.hosts import resource_inventory

    service = _service(creates)
    try:
        result = action(service)
    except resource_inventory.UnknownHost as exc:
        fail(EXIT_NO_TASK, str(exc))
    except resource_inventory.InventoryError as exc:  # refused input or a conflict: nothing was changed
        fail(EXIT_USAGE, str(exc))
    finally:
        service.close()
    hosts = result if isinstance(result, list) else [result]
    if as_json:
        docs = [h.as_dict() for h in hosts]
        click.echo(json.dumps(docs if isinstance(result, list) else docs[0], indent=2))
    else:
        for host in hosts:
            click.echo(_line(host))


@click.group()
def hosts() -> None:
    """The hosts whose capacity tasks reserve (used/total per resource)."""


@hosts.command()
@click.argument("name")
@click.option("--cpu", type=AsciiIntRange(0), required=True, help="CPUs to hand out.")
@click.option("--memory-mb", type=AsciiIntRange(0), required=True, help="Memory to hand out, MB.")
@click.option("--storage-gb", type=AsciiIntRange(0), required=True, help="Storage to hand out, GB.")
@click.option("--json", "as_json", is_flag=True)
def add(name: str, cpu: int, memory_mb: int, storage_gb: int, as_json: bool) -> None:
    """Add host NAME (again with the same capacity: no change)."""
    _run(lambda s: s.add(name, cpu, memory_mb, storage_gb), as_json, creates=True)


@hosts.command(name="list")
@click.option("--json", "as_json", is_flag=True)
def list_hosts(as_json: bool) -> None:
    """Every host with its capacity in use."""
    _run(lambda s: s.list(), as_json)


@hosts.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
def drain(name: str, as_json: bool) -> None:
    """Take no new reservations on NAME; what it holds stays."""
    _run(lambda s: s.drain(name), as_json)


@hosts.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
def activate(name: str, as_json: bool) -> None:
    """Let NAME take reservations again."""
    _run(lambda s: s.activate(name), as_json)


@hosts.command()
@click.option("--prune-days", type=AsciiFloatRange(min=0), help="Also forget claims closed this many days ago.")
def sweep(prune_days: float | None) -> None:
    """Close lapsed reservations (reserving does it too; this tidies listings). Cron-friendly."""
    service = _service(creates=False)
    try:
        result = service.sweep(prune_days * 86400 if prune_days is not None else None)
    finally:
        service.close()
    click.echo(json.dumps(result.as_dict()))


COMMANDS = [hosts]
