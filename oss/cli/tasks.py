"""`baton submit | get | list | watch`: tasks from the command line, straight on the store."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from common.engine.states import TaskStatus
from oss.cli.common import (
    AsciiIntRange, AsciiFloatRange, EXIT_NO_TASK, EXIT_REFUSED, EXIT_USAGE, declare_queues,
    echo_json, exit_code_of, fail, opened_parts, opened_store, parse_labels, parse_status,
    parse_time, task_json,
)

from oss.cli.item_reads import ItemReads

if TYPE_CHECKING:
    from common.engine.document import HistoryEvent, Task
    from common.store.tasks.port import TaskStore


def parse_assignments(pairs: tuple[str, ...]) -> dict[str, Any]:
    """`key=value` pairs; a value that reads as JSON (42, true, {"a": 1}) is taken as such."""
    parameters: dict[str, Any] = {}
    for number, pair in enumerate(pairs, 1):
        key, sep, raw = pair.partition("=")
        if not sep or not key:  # said by its place: a refused value is not echoed
            raise click.BadParameter(f"parameter {number} is not key=value", param_hint="PARAMS")
        try:
            parameters[key] = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):  # nested too deep: the limits refuse it as text
            parameters[key] = raw
    return parameters


@click.command()
@click.argument("task_type")
@click.argument("params", nargs=-1)
@click.option("--params-file", type=click.File("r"), help="JSON object of parameters.")
@click.option("--key", "idempotency_key", help="Idempotency key: the same request again returns the same task; another request under it exits 2.")
@click.option("--priority", type=AsciiIntRange(0, 4), default=0, show_default=True)
@click.option("--start-at", help="Delayed start: ISO-8601 (no zone: UTC) or epoch seconds.")
@click.option("--user", "user_id", help="Owner of the task.")
@click.option("--label", "labels", multiple=True, help="key=value; repeat for more.")
@click.option("--after", "after_task", help="Start once this task (id or idempotency key) succeeded; never if it fails.")
@click.option("--wait", is_flag=True, help="Follow the task until it ends; exit 1 if it failed.")
@click.option("--json", "as_json", is_flag=True, help="Print the task document as JSON.")
@click.option("--plan", "plan_only", is_flag=True,
              help="Create nothing: print what the task would do (graph, locks and holders, modules, start).")
def submit(task_type, params, params_file, idempotency_key, priority, start_at, user_id, labels, after_task,
           wait, as_json, plan_only) -> None:  # fmt: skip
    """Create a task of TASK_TYPE with PARAMS given as key=value."""
    from common.errors import Frozen, IdempotencyConflict, InvalidParameters, UnknownTaskType

    try:
        parameters = json.load(params_file) if params_file else {}
    except (ValueError, RecursionError) as exc:
        raise click.BadParameter(f"not JSON that baton can take ({type(exc).__name__})", param_hint="--params-file") from None
    if not isinstance(parameters, dict):
        raise click.BadParameter("must hold a JSON object", param_hint="--params-file")
    parameters.update(parse_assignments(params))
    request = {"idempotency_key": idempotency_key, "priority": priority, "start_at": parse_time(start_at, "--start-at"),
               "user_id": user_id, "labels": parse_labels(labels), "after_task": after_task}  # fmt: skip
    with opened_parts(creates=True) as parts:
        try:
            if plan_only:
                _print_plan(parts, task_type, parameters, request, as_json)
                return
            declare_queues(parts)
            submission = parts.service.submit(task_type, parameters, **request)
        except (UnknownTaskType, IdempotencyConflict) as exc:
            fail(EXIT_USAGE, str(exc))
        except Frozen as exc:
            fail(EXIT_REFUSED, f"{exc}; nothing was created")
        except InvalidParameters as exc:
            for path, message in exc.errors:
                click.echo(f"{path}: {message}", err=True)
            fail(EXIT_USAGE, "the parameters do not fit the task type; nothing was created")
        task = submission.task
        if not as_json:
            verb = "created" if submission.created else "exists (same idempotency key)"
            click.echo(f"task {task.TaskId} {verb}")
        if wait:
            task = follow(parts.store, task.TaskId, quiet=as_json)
        if as_json:
            echo_json(task_json(task))
        if wait:
            sys.exit(exit_code_of(task))


def _print_plan(parts: Any, task_type: str, parameters: dict[str, Any], request: dict[str, Any], as_json: bool) -> None:
    from common.store.side_stores import open_gate_tables, open_module_drains, open_module_registry
    from oss.services.dry_run import dry_run
    from oss.cli.plan_text import plan_lines

    settings = parts.settings
    timeout = settings.effective_store_timeout
    tables = open_gate_tables(settings.store_url, timeout_seconds=timeout, indexes="none")
    registry = open_module_registry(settings.store_url, timeout_seconds=timeout, indexes="none")
    drains = open_module_drains(settings.store_url, timeout_seconds=timeout, indexes="none")
    try:
        plan = dry_run(parts.service, tables, registry, now=time.time(), module_ttl=settings.module_ttl,
                       task_type=task_type, parameters=parameters, drains=drains, **request)  # fmt: skip
    finally:
        tables.close()
        registry.close()
        drains.close()
    if as_json:
        echo_json(plan.model_dump(mode="json"))
    else:
        click.echo("\n".join(plan_lines(plan)))


@click.command()
@click.argument("task_id")
@click.option("--json", "as_json", is_flag=True)
@click.option("--items", "items_step", metavar="STEP",
              help="Show a page of this for_each step's items (its index or name) instead of the task.")
@click.option("--state", help="With --items: only items in this state (several: comma-separated).")
@click.option("--after", type=AsciiIntRange(0, 10**9), help="With --items: items past this index (printed by the page before).")
@click.option("--limit", type=AsciiIntRange(1, 500), default=100, show_default=True, help="With --items: items per page.")
@click.option("--failed", is_flag=True, help="With --items: only items whose normal phase ended failed, whatever their state now.")
def get(task_id: str, as_json: bool, items_step: str | None, state: str | None, after: int | None, limit: int,
        failed: bool) -> None:
    """Show one task (secrets masked); a for_each step's items by state. With --items, a page of
    that step's items in index order."""
    if items_step is None and (state is not None or after is not None or failed):
        fail(EXIT_USAGE, "--state, --failed and --after page a step's items: give --items STEP too")
    if items_step is None and not as_json and (shown := _quick_get(task_id)) is not None:
        click.echo(shown)
        return
    from common.engine.views import with_full_history
    from common.secrets.task_views import masked_task
    from oss.cli.render import task_summary

    with opened_store() as store:
        task = _task(store, task_id)
        if items_step is not None:
            _items(store, task, items_step, state, after, limit, as_json, failed)
            return
        task = with_full_history(store, task)
        with ItemReads(store) as items:
            counts, runs, attempts = items.counts(task), items.runs(task), items.attempts(task)
        if as_json:
            shown = task_json(task, runs)
            for cursor, by_state in counts.items():
                shown["Steps"][cursor]["ItemCounts"] = by_state
            for cursor, (tried, undone) in attempts.items():
                shown["Steps"][cursor]["Attempts"], shown["Steps"][cursor]["RollbackAttempts"] = tried, undone
            click.echo(json.dumps(shown, indent=2))
        else:
            masked = masked_task(task, runs)
            for cursor, (tried, undone) in attempts.items():  # a step over records: its items' sums
                masked.Steps[cursor].Attempts, masked.Steps[cursor].RollbackAttempts = tried, undone
            click.echo(task_summary(masked, counts))


def _items(store: TaskStore, task: Task, step: str, state: str | None, after: int | None, limit: int,
           as_json: bool, failed: bool = False) -> None:  # fmt: skip
    from common.engine.views import ItemQueryError, parse_item_query, step_cursor
    from common.store.items.open import open_item_store_for
    from oss.services.item_views import item_page
    from oss.cli.render import items_lines

    try:
        query = parse_item_query(state, after, limit, failed)
        cursor = step_cursor(task, step)
    except ItemQueryError as exc:
        option = {"step": "--items", "state": "--state", "after": "--after", "limit": "--limit",
                  "failed": "--failed"}[exc.field]
        fail(EXIT_USAGE, f"{option}: {exc}")
    items = open_item_store_for(store)
    try:
        page = item_page(task, cursor, query, items)
    finally:
        items.close()
    from common.engine.states import FINAL_STATUSES

    final = task.TaskStatus in FINAL_STATUSES
    click.echo(json.dumps(page, indent=2, ensure_ascii=False) if as_json else items_lines(page, final))


@click.command(name="list")
@click.option("--status", help="TaskStatus code (0-5) or name (e.g. ROLLED_BACK).")
@click.option("--type", "task_type", help="Only tasks of this type.")
@click.option("--user", "user_id", help="Only tasks of this owner.")
@click.option("--label", "labels", multiple=True, help="key=value; repeat: all must match.")
@click.option("--since", help="Created at or after (ISO-8601 or epoch).")
@click.option("--until", help="Created before (ISO-8601 or epoch).")
@click.option("--limit", type=AsciiIntRange(1, 1000), default=20, show_default=True)
@click.option("--failed-items", is_flag=True, help="Only tasks that ended with items failed within a budget.")
@click.option("--cursor", help="Continue after the page that printed this cursor.")
@click.option("--json", "as_json", is_flag=True, help='{"items": [...documents], "next_cursor": ...}')
@click.option("--ids", "ids_only", is_flag=True, help="Only the task ids, one a line (for a script: TASK_ID=$(baton list ... --ids)).")
def list_tasks(status, task_type, user_id, labels, since, until, failed_items, limit, cursor, as_json,
               ids_only) -> None:
    """List tasks, newest first."""
    from common.store.tasks.filters import TaskFilter, decode_cursor, encode_cursor

    try:
        after = decode_cursor(cursor) if cursor else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--cursor") from None
    task_filter = TaskFilter(status=parse_status(status), task_type=task_type, user_id=user_id,
                             labels=parse_labels(labels), created_from=parse_time(since, "--since"),
                             created_to=parse_time(until, "--until"), after=after,
                             failed_items=failed_items)  # fmt: skip
    docs = None if as_json else _quick_list(task_filter, limit + 1)
    notes: dict[str, str] = {}  # a task a gate holds: "held (waiting for ...)"
    if docs is None:  # the full way: settings, the store adapter, the document model
        docs, notes = _listed(task_filter, limit + 1, as_json)
    next_cursor = encode_cursor((docs[limit - 1]["TimeCreate"], docs[limit - 1]["TaskId"])) if len(docs) > limit else None
    shown = docs[:limit]
    if as_json:
        echo_json({"items": shown, "next_cursor": next_cursor})
    elif ids_only:  # no cursor line either: every line is an id
        click.echo("".join(f"{doc['TaskId']}\n" for doc in shown), nl=False)
    else:
        for doc in shown:
            status_text = f"{doc['TaskStatus']} {TaskStatus(doc['TaskStatus']).name}"
            click.echo(f"{doc['TaskId']}  {doc['TaskType']:<24} {status_text:<18} {notes.get(doc['TaskId'], '')}{doc['TaskMessage']}")
        if next_cursor:
            click.echo(f"(more: --cursor {next_cursor})")


def _quick_get(task_id: str) -> str | None:
    """A plain task's summary read straight from a SQLite file (oss/cli/quick_reads.py,
    oss/cli/render_doc.py), or None where that reader does not serve."""
    from oss.cli import quick_reads
    from oss.cli.common import require_store
    from oss.cli.render_doc import plain_summary

    path = quick_reads.sqlite_file()
    if path is None:
        return None
    require_store(quick_reads.store_url())
    served, doc = quick_reads.task_doc(path, task_id)
    if served and doc is None:
        fail(EXIT_NO_TASK, "no such task")
    return plain_summary(doc) if doc is not None else None


def _quick_list(task_filter: Any, limit: int) -> list[dict[str, Any]] | None:
    """The page's masked documents read straight from a SQLite file (oss/cli/quick_reads.py),
    or None where that reader does not serve."""
    from oss.cli import quick_reads
    from oss.cli.common import require_store

    path = quick_reads.sqlite_file()
    if path is None:
        return None
    require_store(quick_reads.store_url())
    return quick_reads.list_rows(path, task_filter, limit)


def _listed(task_filter: Any, limit: int, as_json: bool) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The page's masked documents through the store adapter, each with `WaitingFor` as the
    runs of its items in flight make it; for the text, the note of each task a gate holds."""
    from common.engine.document import Task
    from common.secrets.task_views import masked_task_view
    from oss.cli.render import held_note

    with opened_store() as store:
        found = store.list_tasks(task_filter, limit=limit)
        with ItemReads(store) as items:
            docs = [masked_task_view(t, items.runs(t)) for t in found]
    in_flight = (TaskStatus.NOT_STARTED, TaskStatus.RUNNING)
    notes = {} if as_json else {doc["TaskId"]: note for doc in docs
                                if doc["TaskStatus"] in in_flight and (note := held_note(Task.from_doc(doc)))}  # fmt: skip
    return docs, notes


@click.command()
@click.argument("task_id")
@click.option("--interval", type=AsciiFloatRange(0.01, 60), default=0.2, show_default=True,
              help="Seconds between looks at the task.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event, then the task.")
@click.option("--api", "api_url", envvar="BATON_API_URL",
              help="Follow through this OSS's event stream (e.g. http://oss:8080) instead of the store.")  # fmt: skip
@click.option("--token", envvar="BATON_API_TOKEN", help="API token (read role) for --api.")
def watch(task_id: str, interval: float, as_json: bool, api_url: str | None, token: str | None) -> None:
    """Follow a task live until it ends: a line per step event. Exit 0 success, 1 failed."""
    from common.secrets.task_views import masked_task
    from oss.cli.render import task_summary

    if api_url:
        _watch_stream(api_url, token or "", task_id, as_json)
        return
    with opened_store() as store:
        _task(store, task_id)
        task = follow(store, task_id, quiet=False, as_json=as_json, poll=interval)
        if as_json:
            echo_json(task_json(task))
        else:
            click.echo(task_summary(masked_task(task)))
    sys.exit(exit_code_of(task))


def _watch_stream(api_url: str, token: str, task_id: str, as_json: bool) -> None:
    from oss.cli.stream import StreamError, follow_stream
    from oss.cli.render import event_line, task_summary

    def show(task: Task, event: HistoryEvent) -> None:
        if as_json:
            click.echo(json.dumps({"TaskId": task_id, **event.model_dump(mode="json")}))
        else:
            click.echo(event_line(task, event))

    try:
        task = follow_stream(api_url, token, task_id, show)
    except StreamError as exc:
        fail(EXIT_NO_TASK if str(exc).startswith("404") else EXIT_USAGE, str(exc))
    if as_json:
        echo_json(task.model_dump(mode="json"))
    else:
        click.echo(task_summary(task))  # masked by the API already
    sys.exit(exit_code_of(task))


def follow(store: TaskStore, task_id: str, quiet: bool = False, as_json: bool = False,
           poll: float = 0.1) -> Task:  # fmt: skip
    """Print each history event as it happens until the task has ended, and the branches in
    flight and what the task waits for whenever they change (its items kept in records
    included: a drain holds those on their records, not in the task)."""
    from common.engine.views import since
    from common.secrets.task_views import masked_task
    from common.engine.states import FINAL_STATUSES
    from oss.cli.render import branches_line, event_line, waiting_line

    seen, shown_branches, shown_wait = 0, "", ""
    with ItemReads(store) as item_reads:
        while True:
            task = store.get(task_id)
            assert task is not None  # tasks are never deleted
            runs = item_reads.runs(task)
            shown = masked_task(since(store, task, seen), runs)
            if not quiet:
                for event in shown.History:
                    if as_json:
                        click.echo(json.dumps({"TaskId": task_id, **event.model_dump(mode="json")}))
                    else:
                        click.echo(event_line(shown, event))
                branches, wait = branches_line(shown, runs), waiting_line(shown)
                if not as_json and branches and branches != shown_branches:
                    click.echo(branches)
                if not as_json and wait and wait != shown_wait:
                    click.echo(wait)
                shown_branches, shown_wait = branches, wait
            seen = task.history_count
            if task.TaskStatus in FINAL_STATUSES:
                return task
            time.sleep(poll)


def _task(store: TaskStore, task_id: str) -> Task:
    task = store.get(task_id)
    if task is None:
        fail(EXIT_NO_TASK, "no such task")
    return task


COMMANDS = [submit, get, list_tasks, watch]
