"""Quick `thread` commands of modules `ranked` and `ranked_next`, for measuring the order in
which a module claims its backlog (tests.support.claim_order): served by a real module process
through the real runtime (tests/support/run_registry.py). A thread command starts no command
process, so the claims follow one another as fast as the store takes them; `seconds` makes
each command take that long."""

import time

from common.runtime.registry import CommandContext, CommandRegistry

ranked = CommandRegistry("ranked")

RANKED_FLOWS = """
version: 1
task_types:
  ranked:
    description: one quick step on the ranked module
    parameters:
      seconds: {type: number, default: 0}
    steps:
      - name: only
        normal:   {module: ranked, command: work}
        rollback: {module: ranked, command: undo}
  ranked_two:
    description: a quick step on the ranked module, then one on the ranked_next module
    steps:
      - name: first
        normal:   {module: ranked, command: work}
        rollback: {module: ranked, command: undo}
      - name: second
        normal:   {module: ranked_next, command: work}
        rollback: {module: ranked_next, command: undo}
"""

ranked_next = CommandRegistry("ranked_next")


def _add_commands(registry: CommandRegistry) -> None:
    @registry.command(kind="thread")
    def work(ctx: CommandContext) -> dict:
        time.sleep(float(ctx.parameters.get("seconds", 0)))
        return {}

    @registry.command(kind="thread")
    def undo(ctx: CommandContext) -> dict:
        return {}


_add_commands(ranked)
_add_commands(ranked_next)
