"""`baton callback TOKEN --succeed|--fail|--heartbeat`: answer a command that waits for a
callback (docs/guide/callbacks.md), as another system would with `POST /api/v1/callbacks/{token}`.

Like the other commands that change tasks, it reaches the store itself; the token is its only
credential, and it is never printed.
"""

from __future__ import annotations

import json

import click

from oss.cli.common import EXIT_NO_TASK, EXIT_REFUSED, EXIT_USAGE, declare_queues, fail, opened_parts


def _output(value: str | None) -> dict:
    if value is None:
        return {}
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise click.BadParameter(f"must be a JSON object ({exc.msg})", param_hint="--output") from None
    if not isinstance(parsed, dict):
        raise click.BadParameter(f"must be a JSON object, not {type(parsed).__name__}", param_hint="--output")
    return parsed


@click.command(name="callback", help="Call back a step that waits for it: TOKEN is what its command gave "
               "out (ctx.callback_token()). Exactly one of --succeed (with --output, merged into the task's "
               "parameters), --fail (with --message; --no-retry: the step's retries do not apply) or "
               "--heartbeat. Exit 3: no such token; 4: answered already, or its wait is over.")  # fmt: skip
@click.argument("token")
# One flag each, not one shared destination: click keeps the last of flags that share one, so
# `--fail --succeed` was a success. Counted, two outcomes are the usage error they are.
@click.option("--succeed", is_flag=True, help="The work is done: the step succeeds.")
@click.option("--fail", "failed", is_flag=True, help="The work failed: the step fails.")
@click.option("--heartbeat", is_flag=True, help="Still at work: the wait's heartbeat.")
@click.option("--output", help="With --succeed: a JSON object merged into the task's parameters.")
@click.option("--message", default="", help="With --fail: why (the task's message and history).")
@click.option("--no-retry", is_flag=True, help="With --fail: the step's retries do not apply.")
def callback(token: str, succeed: bool, failed: bool, heartbeat: bool, output: str | None, message: str,
             no_retry: bool) -> None:  # fmt: skip
    from common.errors import InvalidInput
    from oss.services.callbacks import CallbackNotTaken

    given = [name for name, on in (("succeed", succeed), ("fail", failed), ("heartbeat", heartbeat)) if on]
    if len(given) != 1:
        raise click.UsageError("say how it went: exactly one of --succeed, --fail or --heartbeat"
                               + (f" (got --{' --'.join(given)})" if given else ""))
    action = given[0]
    if output is not None and action != "succeed":
        raise click.BadParameter("goes with --succeed only", param_hint="--output")
    if no_retry and action != "fail":
        raise click.BadParameter("goes with --fail only", param_hint="--no-retry")
    answer = _output(output)
    with opened_parts() as parts:
        declare_queues(parts)
        try:
            taken = parts.service.callbacks.answer(token, action, answer, message, retryable=not no_retry)
        except CallbackNotTaken as exc:
            code = EXIT_NO_TASK if exc.status == 404 else EXIT_USAGE if exc.status == 422 else EXIT_REFUSED
            fail(code, f"callback refused: {exc}")
        except InvalidInput as exc:
            fail(EXIT_USAGE, f"callback: {exc}")
    click.echo(f"{action}: taken; the wait is {taken.state}")


COMMANDS = [callback]
