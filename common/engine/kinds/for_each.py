"""A `for_each` step over item records (DESIGN.md sec. 12): routing sees it as one unit; its items
run and roll back through their records (common.engine.kinds.fan_out), each as a command."""

from __future__ import annotations

from common.engine.document import Step, Task
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
