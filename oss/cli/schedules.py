"""`baton schedules ...`: periodic tasks from the command line (the sweeper runs their ticks).

Exit codes as for the rest of the CLI: 0 done; 2 bad usage, a refused definition or a name taken;
3 no such schedule; 4 an action that does not fit (pause a paused schedule).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import click

from common.schedule_policies import Missed, Overlap
from oss.cli.common import (
    AsciiFloatRange, AsciiIntRange, EXIT_NO_TASK, EXIT_REFUSED, EXIT_USAGE, echo_json, fail,
    parse_labels, settings,
)
from oss.cli.tasks import parse_assignments

if TYPE_CHECKING:
    from common.scheduling import Schedule  # noqa: F811  (imported again where it is used at run time)
    from oss.services.schedules import ScheduleService


def _run(action: Callable[[ScheduleService], Any], as_json: bool, creates: bool = False) -> None:
    """Only `schedules add` may create the store."""
    from common.errors import ActionRefused, DuplicateSchedule, InvalidParameters, UnknownTaskType
    from common.flows import load_flows
    from common.scheduling import Schedule, ScheduleError
    from common.store.side_stores import open_schedule_store
    from oss.services.schedules import ScheduleService, UnknownSchedule

    loaded = settings(existing_store=not creates)
    flows = load_flows(loaded.flows_path)  # a ConfigError: `baton` says it, exit 2
    schedule_store = open_schedule_store(loaded.store_url, timeout_seconds=loaded.effective_store_timeout,
                                         indexes="none")  # fmt: skip
    service = ScheduleService(schedule_store, flows, limits=loaded.input_limits)
    try:
        result = action(service)
        if result is None:
            return
        shown = [service.shown(s) for s in (result if isinstance(result, list) else [result])]
    except UnknownSchedule as exc:
        fail(EXIT_NO_TASK, str(exc))
    except ActionRefused as exc:
        fail(EXIT_REFUSED, str(exc))
    except InvalidParameters as exc:
        fail(EXIT_USAGE, "; ".join(f"{path}: {message}" for path, message in exc.errors))
    except (ScheduleError, DuplicateSchedule, UnknownTaskType) as exc:
        fail(EXIT_USAGE, str(exc))
    finally:
        service.close()
    if as_json:
        echo_json(shown if isinstance(result, list) else shown[0])
        return
    for schedule in shown:
        click.echo(_line(Schedule.model_validate(schedule)))


def _line(schedule: Schedule) -> str:
    timing = f"cron {schedule.Cron!r} {schedule.Timezone}" if schedule.Cron else f"every {schedule.IntervalSeconds:g}s"
    state = "paused" if schedule.Paused else f"next {_when(schedule.NextAt)}"
    last = f"last task {schedule.LastTaskId}" if schedule.LastTaskId else "no task yet"
    error = f"  last error: {schedule.LastError}" if schedule.LastError else ""
    return (f"{schedule.Name:<20} {schedule.TaskType:<24} {timing:<28} {state:<32} "
            f"fired {schedule.Fired}, skipped {schedule.Skipped}, {last}{error}")  # fmt: skip


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@click.group()
def schedules() -> None:
    """Periodic tasks: a task type with fixed parameters, on a cron expression or an interval."""


@schedules.command()
@click.argument("name")
@click.argument("task_type")
@click.argument("params", nargs=-1)
@click.option("--cron", help="Five fields, e.g. '*/5 * * * *' (minute hour day month weekday).")
@click.option("--every", "interval", type=AsciiFloatRange(min=1), help="Instead of --cron: seconds between ticks.")
@click.option("--timezone", "zone", default="UTC", show_default=True, help="For --cron, e.g. Europe/Paris.")
@click.option("--overlap", type=click.Choice([o.value for o in Overlap]), default=Overlap.SKIP.value,
              show_default=True, help="While the previous task runs: skip the tick, queue it, or allow it.")  # fmt: skip
@click.option("--missed", type=click.Choice([m.value for m in Missed]), default=Missed.LATEST.value,
              show_default=True, help="Ticks missed by more than the grace (sweepers down): run the latest, none, or all.")  # fmt: skip
@click.option("--priority", type=AsciiIntRange(0, 4), default=0, show_default=True)
@click.option("--label", "labels", multiple=True, help="key=value, put on every task it creates.")
@click.option("--json", "as_json", is_flag=True)
def add(name, task_type, params, cron, interval, zone, overlap, missed, priority, labels, as_json) -> None:  # type: ignore[no-untyped-def]
    """Create schedule NAME creating TASK_TYPE tasks with PARAMS (key=value ...)."""
    parameters = parse_assignments(params)
    _run(lambda s: s.create(
        name=name, task_type=task_type, parameters=parameters, cron=cron, interval_seconds=interval,
        timezone=zone, overlap=Overlap(overlap), missed=Missed(missed), priority=priority,
        labels=parse_labels(labels), created_by="cli",
    ), as_json, creates=True)  # fmt: skip


@schedules.command(name="list")
@click.option("--json", "as_json", is_flag=True)
def list_schedules(as_json: bool) -> None:
    """Every schedule: timing, next tick, counts, last task."""
    _run(lambda s: s.list(500), as_json)


@schedules.command()
@click.argument("schedule")
@click.option("--json", "as_json", is_flag=True)
def show(schedule: str, as_json: bool) -> None:
    """One schedule, by id or name."""
    _run(lambda s: s.get(schedule), as_json)


@schedules.command()
@click.argument("schedule")
@click.option("--json", "as_json", is_flag=True)
def pause(schedule: str, as_json: bool) -> None:
    """No tick runs until resumed."""
    _run(lambda s: s.pause(schedule), as_json)


@schedules.command()
@click.argument("schedule")
@click.option("--json", "as_json", is_flag=True)
def resume(schedule: str, as_json: bool) -> None:
    """The next tick is the first after now; ticks that passed while paused are not run."""
    _run(lambda s: s.resume(schedule), as_json)


@schedules.command()
@click.argument("schedule")
def delete(schedule: str) -> None:
    """Delete it; the tasks it created stay."""
    _run(lambda s: s.delete(schedule), False)
    click.echo(f"deleted {schedule} at {_when(time.time())}")



COMMANDS = [schedules]
