"""A `for_each` step over item records (DESIGN.md sec. 12): routing sees it as one unit; its items
run and roll back through their records (common.engine.kinds.fan_out), each as a command."""

from __future__ import annotations

from collections.abc import Callable

from common.engine.document import OperatorRequest, Step, Task
from common.engine.kinds import fan_out
from common.engine.kinds.command import CommandKind
from common.engine.routing import Unit
from common.engine.units import Timing


class ForEachRecordsKind(CommandKind):
    name = "for_each"

    def runs(self, step: Step) -> bool:
        return fan_out.keeps_records(step)

    def roll_back(self, task: Task, unit: Unit, timing: Timing, actor: str) -> bool:
        fan_out.start_rollback(task, unit[0], timing.now)  # each chain's first applied item, via the outbox
        return True

    def cancel_step(self, task: Task, cursor: int, request: OperatorRequest, stop_running: bool) -> None:
        if stop_running:  # the claimed item runs are stopped by the entry that withdraws the rest
            fan_out.stop_claimed(task, cursor, request)

    def reopen_rollback(self, task: Task, unit: Unit, action: str, request: OperatorRequest,
                        ids: Callable[[], str]) -> bool:
        # Its items' records hold the failures: the entry's relay retries or compensates them.
        fan_out.reopen_rollback(task, unit[0], action, request.Actor, request.Reason, request.Time, ids)
        return True

    def item_count(self, step: Step) -> int:
        return step.ItemCount or 0

    def item_skip_elsewhere(self, cursor: int, item: int) -> str | None:
        # a change of its record: common.engine.kinds.item_actions.skip_item
        return f"item {item} of step {cursor} is kept in a record of its own: skip it through its record"

    def resume(self, task: Task, cursor: int, request: OperatorRequest, ids: Callable[[], str]) -> None:
        fan_out.resume_records(task, cursor, request.Time, ids)  # the items a pause held back (their relay starts them)
