"""Commands for the runtime property test over random DAGs (tests/integration/
test_graph_property_runtime.py): one normal and one rollback command per step position, so a
fault rule (common.runtime.faults) can target any step, item and phase of a random flow."""

from common.runtime.registry import CommandContext, CommandRegistry

registry = CommandRegistry("prop")
POSITIONS = 8


def _add(index: int) -> None:
    def work(ctx: CommandContext) -> dict:
        return {f"did_{index}": True} if ctx.item_index is None else {"item": ctx.item}

    def undo(ctx: CommandContext) -> dict:
        return {}

    registry.command(f"n{index}")(work)
    registry.command(f"u{index}")(undo)


for _index in range(POSITIONS):
    _add(_index)


@registry.command()
def child_a(ctx: CommandContext) -> dict:
    return {"child_a": True}


@registry.command()
def child_b(ctx: CommandContext) -> dict:
    return {"child_b": True}


@registry.command()
def undo_child(ctx: CommandContext) -> dict:
    return {}
