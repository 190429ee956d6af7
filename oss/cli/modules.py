"""`baton modules`: the modules that announced themselves in the store, live first (as
GET /api/v1/modules), and `baton modules drain|undrain NAME` (as POST /api/v1/modules/NAME/drain).
`live_commands` is what `baton check-flows --live` checks a file against."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from oss.cli.common import EXIT_NO_TASK, EXIT_REFUSED, EXIT_USAGE, echo_json, settings
from oss.cli.ops import _default_actor

if TYPE_CHECKING:
    from common.settings import Settings
    from common.store.side.drains import ModuleDrain
    from common.store.side.modules import ModuleRegistration


def live_commands(loaded: Settings) -> dict[str, frozenset[str]]:
    from common.store.side.modules import live_modules

    return live_modules(_registrations(loaded), time.time(), loaded.module_ttl)


@contextmanager
def _opened(opener: Callable[..., Any], loaded: Settings) -> Iterator[Any]:
    """A side store of the task store's (common.store.side_stores), bounded like it; closed after."""
    part = opener(loaded.store_url, timeout_seconds=loaded.effective_store_timeout, indexes="none")
    try:
        yield part
    finally:
        part.close()


def _registrations(loaded: Settings) -> list[ModuleRegistration]:
    from common.store.side_stores import open_module_registry

    with _opened(open_module_registry, loaded) as registry:
        return registry.registrations()  # type: ignore[no-any-return]


@click.group(invoke_without_command=True)
@click.option("--stale", is_flag=True, help="Also modules whose every worker stopped renewing.")
@click.option("--json", "as_json", is_flag=True, help="One object per worker.")
@click.pass_context
def modules(ctx: click.Context, stale: bool, as_json: bool) -> None:
    """Modules announced in the store: live or not, commands, workers and last heartbeats; a
    drained module says who drained it and why. `drain` and `undrain` park and let go its steps."""
    from common.store.side.modules import is_live, live_modules

    if ctx.invoked_subcommand is not None:
        return
    loaded = settings(client=True, existing_store=True)
    # An undrained module's record says who let its steps go, and why: --stale shows it too.
    drains = {d.Module: d for d in _drains(loaded) if d.Drained or stale}
    registrations = _registrations(loaded)
    now, ttl = time.time(), loaded.module_ttl
    live = live_modules(registrations, now, ttl)
    shown = [r for r in registrations if stale or r.Module in live]
    if as_json:
        echo_json([{**r.model_dump(), "Live": is_live(r, now, ttl),
                    "Drain": _drain_json(drains[r.Module]) if r.Module in drains else None} for r in shown])
        return
    for drain in drains.values():
        click.echo(_drain_line(drain))
    if not shown:
        click.echo("no live module has announced itself" + ("" if stale else " (--stale shows stopped ones)"))
        return
    for registration in sorted(shown, key=lambda r: (r.Module not in live, r.Module, r.WorkerId)):
        click.echo(_line(registration, now, ttl))


def _line(r: ModuleRegistration, now: float, ttl: float) -> str:
    from common.store.side.modules import is_live

    state = "live " if is_live(r, now, ttl) else "stale"
    return (f"{r.Module:<12} {state}  {r.WorkerId:<40} v{r.Version:<8} heartbeat {now - r.HeartbeatAt:5.1f}s ago  "
            f"commands: {', '.join(_command(r, c) for c in r.Commands)}")


def _command(r: ModuleRegistration, command: str) -> str:
    """A command and its kind (process, thread, async), as its module announced it."""
    kind = r.Kinds.get(command)
    return f"{command} ({kind})" if kind else command


def _drains(loaded: Settings) -> list[ModuleDrain]:
    from common.store.side_stores import open_module_drains

    with _opened(open_module_drains, loaded) as drains:
        return drains.drains()  # type: ignore[no-any-return]


def _drain_json(drain: ModuleDrain) -> dict[str, Any]:
    from oss.services.module_drains import shown_reason

    return {**drain.model_dump(), "Reason": shown_reason(drain)}


def _drain_line(drain: ModuleDrain) -> str:
    from common.engine.views import utc_text

    from oss.services.module_drains import shown_reason

    state = "drained" if drain.Drained else "undrained"
    one_line = shown_reason(drain).replace("\n", "\\n").replace("\t", " ")  # a reason may hold a newline
    return f"{drain.Module:<12} {state} by {drain.Actor} at {utc_text(drain.Since)}: {one_line}"


def _drain_command(drained: bool) -> click.Command:
    name = "drain" if drained else "undrain"
    what = ("Drain a module for a deploy: its new steps wait (WaitingFor drain), its running commands finish."
            if drained else "Undrain a module: the steps it held go (within a few seconds).")

    @click.command(name=name, help=what + " Exit 2: a control or invisible character in --reason or --as; 3: no such module in "
                   "flows.yaml; 4: drained already (undrain: not drained), or the record kept changing.")
    @click.argument("module")
    @click.option("--reason", required=True, help="Why: stored with the drain record and logged.")
    @click.option("--as", "actor", default=_default_actor, show_default="cli:<login name>",
                  help="Who acts, as the record and the log keep it.")  # fmt: skip
    @click.option("--json", "as_json", is_flag=True)
    def run(module: str, reason: str, actor: str, as_json: bool) -> None:
        from common.flows import load_flows
        from common.store.side_stores import open_module_drains
        from common.errors import InvalidInput
        from oss.services.module_drains import DrainConflict, DrainRace, UnknownModule, set_drain

        if not reason.strip():
            raise click.BadParameter("must say why", param_hint="--reason")
        loaded = settings(client=True)
        known = load_flows(loaded.flows_path).modules()
        with _opened(open_module_drains, loaded) as drains:
            try:
                drains.drains()  # a store that is down says so first (exit 5), as every command does
                stored = set_drain(drains, known, module, drained, actor, reason.strip(), time.time(),
                                   loaded.input_limits)  # fmt: skip
            except InvalidInput as exc:
                click.echo(f"baton: {exc}", err=True)
                raise SystemExit(EXIT_USAGE) from exc
            except UnknownModule as exc:
                click.echo(f"baton: {module!r}: {exc}", err=True)
                raise SystemExit(EXIT_NO_TASK) from exc
            except (DrainConflict, DrainRace) as exc:
                click.echo(f"baton: {exc}", err=True)
                raise SystemExit(EXIT_REFUSED) from exc
        if as_json:
            echo_json(stored.model_dump())
        else:
            click.echo(_drain_line(stored))

    return run


modules.add_command(_drain_command(True))
modules.add_command(_drain_command(False))

COMMANDS = [modules]
