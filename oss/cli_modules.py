"""`baton modules`: the modules that announced themselves in the store, live first (as
GET /api/v1/modules). `live_commands` is what `baton check-flows --live` checks a file against."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from oss.cli_common import echo_json, settings

if TYPE_CHECKING:
    from common.settings import Settings
    from common.store.modules_port import ModuleRegistration


def live_commands(loaded: Settings) -> dict[str, frozenset[str]]:
    from common.store.modules_port import live_modules

    return live_modules(_registrations(loaded), time.time(), loaded.module_ttl)


def _registrations(loaded: Settings) -> list[ModuleRegistration]:
    from common.store.side_stores import open_module_registry

    registry = open_module_registry(loaded.store_url, timeout_seconds=loaded.effective_store_timeout, indexes="none")
    try:
        return registry.registrations()
    finally:
        registry.close()


@click.command()
@click.option("--stale", is_flag=True, help="Also modules whose every worker stopped renewing.")
@click.option("--json", "as_json", is_flag=True, help="One object per worker.")
def modules(stale: bool, as_json: bool) -> None:
    """Modules announced in the store: live or not, commands, workers and last heartbeats."""
    from common.store.modules_port import is_live, live_modules

    loaded = settings(client=True)
    registrations = _registrations(loaded)
    now, ttl = time.time(), loaded.module_ttl
    live = live_modules(registrations, now, ttl)
    shown = [r for r in registrations if stale or r.Module in live]
    if as_json:
        echo_json([{**r.model_dump(), "Live": is_live(r, now, ttl)} for r in shown])
        return
    if not shown:
        click.echo("no live module has announced itself" + ("" if stale else " (--stale shows stopped ones)"))
        return
    for registration in sorted(shown, key=lambda r: (r.Module not in live, r.Module, r.WorkerId)):
        click.echo(_line(registration, now, ttl))


def _line(r: ModuleRegistration, now: float, ttl: float) -> str:
    from common.store.modules_port import is_live

    state = "live " if is_live(r, now, ttl) else "stale"
    return (f"{r.Module:<12} {state}  {r.WorkerId:<40} v{r.Version:<8} heartbeat {now - r.HeartbeatAt:5.1f}s ago  "
            f"commands: {', '.join(_command(r, c) for c in r.Commands)}")


def _command(r: ModuleRegistration, command: str) -> str:
    """A command and its kind (process, thread, async), as its module announced it."""
    kind = r.Kinds.get(command)
    return f"{command} ({kind})" if kind else command


COMMANDS = [modules]
