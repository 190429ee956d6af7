"""What the CLI commands share: settings, the parts they open, exit codes, output helpers.

Imported by every command module when `baton` starts, so it imports nothing heavy at its top
(no pydantic model, no logging set-up, no driver): each helper imports what it needs.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import click

from common.labels import is_label_key
from common.errors import ConfigError
from common.errors import EXIT_UNAVAILABLE as EXIT_UNAVAILABLE  # 5, shared with the module processes
from common.engine.states import TaskStatus, parse_task_status
from oss.services.times import to_epoch

if TYPE_CHECKING:
    from common.engine.document import Run, Task
    from common.settings import Settings
    from common.store.tasks.port import TaskStore
    from oss.wiring import Parts

# Exit codes (documented in oss/cli/__init__.py)
EXIT_OK = 0
EXIT_TASK_FAILED = 1
EXIT_USAGE = 2
EXIT_NO_TASK = 3
EXIT_REFUSED = 4


def settings(client: bool = False, serves: bool = False, existing_store: bool = False) -> Settings:
    """The settings, logging configured. A `client` command (submit, watch, hosts...) prints its
    answer for a person or a script: its own info lines would only interleave with it, and a
    store or broker that does not answer is its one line of failure, not a retry log: it logs
    errors only, and the connection libraries nothing, unless BATON_LOG_LEVEL asks for more.
    A command that runs once (all but those that `serve` until stopped) fails within seconds
    when nothing serves its MongoDB store (common.store.mongo.first_contact). A command that
    only reads, or acts on what must exist already (`existing_store`), refuses a SQLite file that
    does not exist (require_store)."""
    from common.logging import configure_logging, configure_logging_when_used
    from common.settings import load_settings

    try:
        loaded = load_settings()
    except ConfigError as exc:
        fail(EXIT_USAGE, str(exc))
    if "item_records" in loaded.model_fields_set:  # given: a command may route a task too (retry, skip)
        from common.engine.changes import wire_records  # not imported otherwise: `get` stays light

        wire_records(loaded)
    if existing_store:
        require_store(loaded.store_url)
    if not serves:
        from common.store.mongo.first_contact import fail_fast_when_unreachable

        fail_fast_when_unreachable()
    quiet = client and "log_level" not in loaded.model_fields_set
    if quiet:  # set up when first needed: most client commands never write a line
        configure_logging_when_used(loaded.log_format, "error", libraries="critical")
    else:
        configure_logging(loaded.log_format, loaded.log_level)
    return loaded


def require_store(url: str) -> None:
    """Opening a SQLite file creates it, and its folders: a command that only reads, or acts on
    tasks that must exist, would leave an empty store behind a mistyped path and answer "no such
    task" (or nothing). It says instead that no store exists there, with the code of a store that
    cannot be opened (5). MongoDB creates nothing on a read."""
    from common.store.urls import sqlite_path, url_scheme

    if url_scheme(url) != "sqlite":
        return
    path = sqlite_path(url)
    if not os.path.isfile(path):
        # Worded as every store that cannot be opened is ("the store cannot ...", the URL's kind).
        fail(EXIT_UNAVAILABLE, f"the store cannot be opened: sqlite {path}: no store exists there (BATON_STORE_URL): "
                               "check the path; this command creates none (`baton up`, `baton oss` or `baton submit` do)")


@contextmanager
def opened_parts(creates: bool = False) -> Iterator[Parts]:
    """Store, broker, flows and the task service: for commands that change tasks. Only a command
    that `creates` tasks may create the store."""
    from oss.wiring import build

    try:
        parts = build(settings(client=True, existing_store=not creates))
    except ConfigError as exc:  # flows.yaml or a store URL that does not work
        fail(EXIT_USAGE, str(exc))
    try:
        yield parts
    finally:
        parts.close()


def declare_queues(parts: Parts) -> None:
    """For a command that may publish, before it changes anything: one connection attempt first
    (`ping`), so a broker that is down fails the command within seconds, with nothing changed,
    instead of after the half minute a publish keeps reconnecting through a broker's restart."""
    parts.broker.ping()
    parts.service.declare_queues()


@contextmanager
def opened_store() -> Iterator[TaskStore]:
    """The task store alone: for commands that only read tasks (no flows, no broker to open)."""
    from common.store.factory import open_store

    loaded = settings(client=True, existing_store=True)
    store = open_store(loaded.store_url, timeout_seconds=loaded.effective_store_timeout, indexes="none")
    try:
        yield store
    finally:
        store.close()


def fail(code: int, message: str) -> NoReturn:
    click.echo(f"baton: {message}", err=True)
    sys.exit(code)


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def report_many(as_json: bool, fields: dict[str, Any], summary: str, refused: list[tuple[str, str]], *,
                dry_run: bool, changes: int, named: int = 0) -> None:
    """What a change of many tasks did (`baton bulk`, `baton migrate`): with --json `fields` and
    every refused task with why; else the `summary` line, the first `named` refused tasks with
    why, the rest counted by why (the five most common), and the dry run's reminder when it
    would change any."""
    if as_json:
        echo_json({**fields, "refused": [{"task_id": task_id, "reason": why} for task_id, why in refused]})
        return
    click.echo(summary)
    for task_id, why in refused[:named]:
        click.echo(f"  refused {task_id}: {why}")
    for why, count in Counter(why for _, why in refused[named:]).most_common(5):
        click.echo(f"  {count} {'more ' if named else ''}refused: {why}")
    if dry_run and changes:
        click.echo("dry run: nothing changed; run again with --apply to do it")


def task_json(task: Task, item_runs: Iterable[Run] = ()) -> dict[str, Any]:
    """`item_runs`: the runs of its items kept in records (oss.services.item_views.item_runs)."""
    from common.secrets.task_views import masked_task_view

    return masked_task_view(task, item_runs)


def exit_code_of(task: Task) -> int:
    return EXIT_OK if task.TaskStatus is TaskStatus.SUCCESS else EXIT_TASK_FAILED


def parse_status(text: str | None) -> TaskStatus | None:
    if text is None:
        return None
    try:
        return parse_task_status(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--status") from None


_ASCII_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


class _Ascii:
    """A number option written in plain ASCII digits: click alone (int(), float()) would read
    '٣' as 3 and '1_0' as 10. The refusal names the option, not what was typed."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not _ASCII_NUMBER.fullmatch(value):
            self.fail("must be a number in ASCII digits", param, ctx)  # type: ignore[attr-defined]
        return super().convert(value, param, ctx)  # type: ignore[misc]


class AsciiIntRange(_Ascii, click.IntRange):
    pass


class AsciiFloatRange(_Ascii, click.FloatRange):
    pass


class AsciiIndex(AsciiIntRange):
    """A step's or an item's index: its one spelling, so "00" is refused, not read as 0."""

    def __init__(self) -> None:
        super().__init__(0)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value[1:2] and value.startswith("0"):
            self.fail(f"{value!r}: an index is written in digits without leading zeros (0, 1, 12)", param, ctx)
        return super().convert(value, param, ctx)


def parse_labels(pairs: tuple[str, ...], hint: str = "--label") -> dict[str, str]:
    labels: dict[str, str] = {}
    for number, pair in enumerate(pairs, 1):
        key, sep, value = pair.partition("=")
        if not sep or not is_label_key(key):  # said by its place: a refused value is not echoed
            raise click.BadParameter(
                f"label {number} is not key=value with a key of letters, digits, _ / -", param_hint=hint
            )
        labels[key] = value
    return labels


def parse_time(text: str | None, hint: str) -> float | None:
    try:
        return None if text is None else to_epoch(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None
