"""The `baton` command: submit and inspect tasks, check flows.yaml, start the processes.

Exit codes: 0 done; 1 the task ended failed (with --wait); 2 bad usage or configuration;
3 no such task.
"""

from __future__ import annotations

import json
import runpy
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from common.errors import BatonError, ConfigError, UnknownTaskType
from common.logging import configure_logging, mask_secrets
from common.settings import Settings, load_settings
from common.statuses import FINAL_STATUSES, TaskStatus
from oss.render import event_line, task_summary
from oss.wiring import build, build_sweeper

BUILTIN_REGISTRIES = (
    "modules.resource.commands:registry",
    "modules.mysql.commands:registry",
    "modules.monitor.commands:registry",
)


def _settings() -> Settings:
    try:
        settings = load_settings()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    configure_logging(settings.log_format, settings.log_level)
    return settings


def parse_assignments(pairs: tuple[str, ...]) -> dict[str, Any]:
    """`key=value` pairs; a value that reads as JSON (42, true, {"a": 1}) is taken as such."""
    parameters: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not key=value", param_hint="PARAMS")
        try:
            parameters[key] = json.loads(raw)
        except json.JSONDecodeError:
            parameters[key] = raw
    return parameters


@click.group()
def main() -> None:
    """baton: crash-safe multi-step operations with rollback."""


@main.command()
@click.argument("task_type")
@click.argument("params", nargs=-1)
@click.option("--params-file", type=click.File("r"), help="JSON object of parameters.")
@click.option("--key", "idempotency_key", help="Idempotency key: the same key returns the same task.")
@click.option("--priority", type=click.IntRange(0, 4), default=0, show_default=True)
@click.option("--wait", is_flag=True, help="Follow the task until it ends; exit 1 if it failed.")
@click.option("--json", "as_json", is_flag=True, help="Print the task document as JSON.")
def submit(task_type, params, params_file, idempotency_key, priority, wait, as_json) -> None:
    """Create a task of TASK_TYPE with PARAMS given as key=value."""
    parameters = json.load(params_file) if params_file else {}
    if not isinstance(parameters, dict):
        raise click.BadParameter("must hold a JSON object", param_hint="--params-file")
    parameters.update(parse_assignments(params))
    parts = build(_settings())
    try:
        parts.service.declare_queues()
        submission = parts.service.submit(
            task_type, parameters, idempotency_key=idempotency_key, priority=priority
        )
        task = submission.task
        if not as_json:
            verb = "created" if submission.created else "exists (same idempotency key)"
            click.echo(f"task {task.TaskId} {verb}")
        if wait:
            task = _follow(parts, task.TaskId, quiet=as_json)
        if as_json:
            click.echo(json.dumps(mask_secrets(task.to_doc()), indent=2))
        if wait and task.TaskStatus is not TaskStatus.SUCCESS:
            sys.exit(1)
    except UnknownTaskType as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        parts.close()


@main.command()
@click.argument("task_id")
@click.option("--json", "as_json", is_flag=True)
def get(task_id: str, as_json: bool) -> None:
    """Show one task."""
    parts = build(_settings())
    try:
        task = parts.service.get(task_id)
        if task is None:
            click.echo(f"no task {task_id}", err=True)
            sys.exit(3)
        click.echo(json.dumps(mask_secrets(task.to_doc()), indent=2) if as_json else task_summary(task))
    finally:
        parts.close()


@main.command(name="list")
@click.option("--status", type=click.IntRange(0, 5), help="Only tasks with this TaskStatus code.")
@click.option("--type", "task_type", help="Only tasks of this type.")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def list_tasks(status, task_type, limit, as_json) -> None:
    """List tasks, newest first."""
    parts = build(_settings())
    try:
        tasks = parts.store.list_tasks(
            status=TaskStatus(status) if status is not None else None, task_type=task_type, limit=limit
        )
        if as_json:
            click.echo(json.dumps([mask_secrets(t.to_doc()) for t in tasks], indent=2))
            return
        for task in tasks:
            click.echo(f"{task.TaskId}  {task.TaskType:<24} {task.TaskStatus.name:<16} {task.TaskMessage}")
    finally:
        parts.close()


@main.command(name="check-flows")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--registry", "registries", multiple=True, default=BUILTIN_REGISTRIES,
              show_default=True, help="module:attribute of a CommandRegistry to check commands against.")
def check_flows(path: Path | None, registries: tuple[str, ...]) -> None:
    """Validate flows.yaml; print every problem with its line and path."""
    from common.flows import load_flows
    from common.runtime.registry import load_registry

    known = {r.module: r.names() for r in map(load_registry, registries)}
    target = path or Path(load_settings().flows_path)
    try:
        catalog = load_flows(target, known)
    except ConfigError as exc:
        click.echo(str(exc), err=True)
        sys.exit(2)
    click.echo(f"{target}: ok, {len(catalog.task_types)} task types: {', '.join(catalog.task_types)}")


@main.command()
@click.argument("name")
def module(name: str) -> None:
    """Run module NAME (resource, mysql, monitor, or a package under modules/) in this process."""
    runpy.run_module(f"modules.{name}", run_name="__main__", alter_sys=True)


@main.command()
def sweeper() -> None:
    """Run the sweeper: re-dispatch lapsed steps and relay unsent outbox entries."""
    from oss.processes import run_until_signalled

    settings = _settings()
    parts = build(settings)
    parts.service.declare_queues()
    sweeper_ = build_sweeper(settings, parts.store, parts.broker)
    stop = threading.Event()
    thread = threading.Thread(target=sweeper_.run, args=(stop,), name="baton-sweeper")
    thread.start()
    run_until_signalled(stop)
    thread.join(timeout=settings.shutdown_grace_seconds)
    parts.close()


@main.command()
@click.option("--task-type", default="demo", show_default=True)
def demo(task_type: str) -> None:
    """Start every module and a sweeper as processes, run a task, show its progress, stop."""
    from oss.processes import run_demo

    sys.exit(run_demo(_settings(), task_type, click.echo))


def _follow(parts, task_id: str, quiet: bool = False, poll: float = 0.1):
    """Print each history event as it happens until the task is final."""
    seen = 0
    while True:
        task = parts.service.get(task_id)
        if not quiet:
            for event in task.History[seen:]:
                click.echo(event_line(task, event))
        seen = len(task.History)
        if task.TaskStatus in FINAL_STATUSES:
            return task
        time.sleep(poll)


if __name__ == "__main__":
    try:
        main()
    except BatonError as exc:
        click.echo(f"baton: {exc}", err=True)
        sys.exit(2)
