"""`baton flows versions | diff`: the revision of each task type (its flows.yaml `version:` and
the content hash every task of it records), and what changed between two flows files."""

from __future__ import annotations

from pathlib import Path

import click

from oss.cli.common import echo_json, settings

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group()
def flows() -> None:
    """Versions of the task types, and what changed between two flows files."""


@flows.command()
@click.argument("path", type=FILE, required=False)
@click.option("--json", "as_json", is_flag=True)
def versions(path: Path | None, as_json: bool) -> None:
    """Each task type's version label and content hash (PATH: default BATON_FLOWS_PATH)."""
    from common.flows import load_flows

    catalog = load_flows(path or settings(client=True).flows_path)
    rows = [{"task_type": name, "version": d.version, "hash": d.content_hash} for name, d in sorted(catalog.task_types.items())]
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        click.echo(f"{row['task_type']:<28} {row['hash']}  {row['version'] or '-'}")


@flows.command()
@click.argument("files", type=FILE, nargs=-1, required=True)
def diff(files: tuple[Path, ...]) -> None:
    """What changed, task type by task type: `diff NEW` against BATON_FLOWS_PATH, or `diff OLD NEW`.

    A task records the hash of the revision it runs (`FlowHash`): tasks in flight keep running
    the steps they were created with."""
    from common.flows import load_flows
    from common.flows.versions import diff_catalogs

    if len(files) > 2:
        raise click.UsageError("give NEW, or OLD and NEW")
    old_path = files[0] if len(files) == 2 else Path(settings(client=True).flows_path)
    changes = diff_catalogs(load_flows(old_path), load_flows(files[-1]))
    click.echo("\n".join(changes) if changes else "no task type changed")


COMMANDS = [flows]
