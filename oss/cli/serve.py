"""`baton oss | sweeper | module | up | demo | check-flows`: start baton's processes, check a flows file."""

from __future__ import annotations

import runpy
import sys
import threading
from pathlib import Path

import click

from common.errors import ConfigError
from oss.cli.common import AsciiIntRange, EXIT_USAGE, fail, settings

@click.command()
@click.option("--host", help="Listen address (default BATON_OSS_HOST, 127.0.0.1).")
@click.option("--port", type=AsciiIntRange(0, 65535), help="Port (default BATON_OSS_PORT, 8080).")
def oss(host: str | None, port: int | None) -> None:
    """Run OSS: the REST API (with its OpenAPI at /api/v1/docs) and the sweeper."""
    import uvicorn

    from common.engine.changes import wire_records
    from common.logging import configure_logging
    from common.tracing.setup import configure_tracing
    from oss.api import create_app
    from oss.settings import load_oss_settings

    try:
        loaded = load_oss_settings()
        configure_logging(loaded.log_format, loaded.log_level)
        configure_tracing("baton-oss")  # OTEL_* (common/tracing/config.py)
        wire_records(loaded)
        app = create_app(loaded)
    except ConfigError as exc:
        fail(EXIT_USAGE, str(exc))
    # log_config=None: uvicorn's lines go through baton's logging (JSON in production), not a
    # plain-text set-up of its own; one access line per request only when debugging.
    uvicorn.run(app, host=host or loaded.oss_host, port=loaded.oss_port if port is None else port,
                timeout_graceful_shutdown=int(loaded.shutdown_grace_seconds), log_config=None,
                log_level=loaded.log_level, access_log=loaded.log_level == "debug")  # fmt: skip


@click.command(name="check-flows")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--registry", "registries", multiple=True,
              help="module:attribute of a CommandRegistry outside modules/<name>/commands.py (repeatable).")
@click.option("--live", is_flag=True,
              help="Check against the modules running now (announced in BATON_STORE_URL) instead.")  # fmt: skip
def check_flows(path: Path | None, registries: tuple[str, ...], live: bool) -> None:
    """Validate flows.yaml; print every problem with its line and path.

    Each module the file names is checked against its registry, found as `baton up` finds it:
    modules/<name>/commands.py, `registry`. A module with none is reported (a typo, or a module
    this checkout does not hold: name its registry with --registry). With --live, against the
    modules that announced themselves and still renew their heartbeat: one not running is
    reported."""
    from common.flows import load_flows
    from common.module_hooks import conventional_modules
    from common.runtime.discovery import conventional_commands
    from oss.cli.modules import live_commands

    loaded = settings(client=True)
    target = path or Path(loaded.flows_path)
    try:
        named = load_flows(target).modules()  # the file's own problems first, with their lines
        if live:
            known = live_commands(loaded)
            click.echo(f"checked against the live modules: {', '.join(sorted(known)) or 'none'}", err=True)
        else:
            known = conventional_commands({*named, *conventional_modules()})
            known.update({r.module: r.names() for r in map(_registry, registries)})
        catalog = load_flows(target, known)
    except ConfigError as exc:
        click.echo(str(exc), err=True)
        sys.exit(EXIT_USAGE)
    click.echo(f"{target}: ok, {len(catalog.task_types)} task types: {', '.join(catalog.task_types)}")


def _registry(ref: str):  # type: ignore[no-untyped-def]
    from common.runtime.registry import load_registry

    try:
        return load_registry(ref)
    except (ImportError, AttributeError, TypeError) as exc:
        raise ConfigError(f"--registry {ref}: {exc}") from None


@click.command()
@click.argument("name")
def module(name: str) -> None:
    """Run module NAME (resource, mysql, monitor, or a package under modules/) in this process.
    Exit codes as the CLI's: 2 bad configuration, 5 the store or the broker cannot be reached."""
    import importlib.util

    try:
        found = importlib.util.find_spec(f"modules.{name}.__main__") is not None
    except (ImportError, ValueError):  # not a package, or a name no module can have
        found = False
    if not found:
        fail(EXIT_USAGE, f"no module {name!r}: modules/{name}/__main__.py does not exist")
    runpy.run_module(f"modules.{name}", run_name="__main__", alter_sys=True)


@click.command()
def sweeper() -> None:
    """Run the sweeper: re-dispatch lapsed steps and relay unsent outbox entries."""
    from common.background import BACKGROUND_MARGIN_SECONDS, join_all
    from common.stop_signals import stop_on_signals
    from common.module_hooks import module_hooks
    from common.tracing.setup import configure_tracing
    from oss.wiring import build, build_sweeper

    loaded = settings(serves=True)
    try:
        configure_tracing("baton-sweeper")  # OTEL_* (common/tracing/config.py)
    except ConfigError as exc:
        fail(EXIT_USAGE, str(exc))
    parts = build(loaded, indexes="check")  # OSS creates them
    parts.service.declare_queues()
    sweeper_ = build_sweeper(loaded, parts.store, parts.broker, parts.service)
    stop = threading.Event()
    # Before "sweeper started" is logged: whoever sees that line may stop the process at once,
    # and a SIGTERM before the handler would end it without its graceful stop.
    stop_on_signals(stop)
    # BATON_METRICS_PORT, like a module's; served before "sweeper started" is logged, as a
    # module's is before its own line: whoever waits for that line may scrape at once.
    sweeper_.metrics.serve(loaded.metrics_port)
    thread = threading.Thread(target=sweeper_.run, args=(stop,), name="baton-sweeper")
    thread.start()
    # The modules' own jobs (the mysql reconciler: BATON_RECONCILE_INTERVAL_SECONDS).
    jobs = [start(loaded, parts.store, stop) for start in module_hooks("background_job")]
    while not stop.wait(1.0):
        pass
    # Every thread that uses the store ends before it closes (common.background).
    if join_all([thread, *jobs], loaded.shutdown_grace_seconds + BACKGROUND_MARGIN_SECONDS):
        parts.close()


@click.command()
@click.option("--task-type", default="demo", show_default=True)
def demo(task_type: str) -> None:
    """Start every module and a sweeper as processes, run a task, show its progress, stop."""
    from common.errors import InvalidParameters
    from oss.cli.processes import run_demo

    try:
        sys.exit(run_demo(settings(serves=True), task_type, click.echo))
    except InvalidParameters as exc:
        fail(EXIT_USAGE, f"{task_type} needs parameters the demo cannot make up: {exc}")


@click.command()
@click.option("--host", help="Listen address (default BATON_OSS_HOST, 127.0.0.1).")
@click.option("--port", type=AsciiIntRange(0, 65535), help="Port (default BATON_OSS_PORT, 8080).")
@click.option("--task-type", default="demo", show_default=True, help="The task submitted at start.")
@click.option("--no-demo", is_flag=True, help="Submit no task at start.")
def up(host: str | None, port: int | None, task_type: str, no_demo: bool) -> None:
    """Everything in one process: OSS, every module, the sweeper, the store and the in-process
    broker (or RabbitMQ when BATON_BROKER_URL names one that answers). Runs a demo task, then
    serves the API until Ctrl-C or SIGTERM."""
    from oss.cli.embedded import Options, run_embedded

    options = Options(host=host, port=port, task_type=None if no_demo else task_type)
    sys.exit(run_embedded(options, click.echo, lambda line: click.echo(line, err=True)))


COMMANDS = [oss, check_flows, module, sweeper, up, demo]
