"""A command step: its run is a message on its module's queue, claimed by a worker."""

from __future__ import annotations

from collections.abc import Callable

from common.engine.document import OperatorRequest, OutboxEntry, Run, Step, Task
from common.engine.routing import Unit
from common.engine.units import Timing, publish_entry


class CommandKind:
    name = "command"
    unit_gated = True

    def runs(self, step: Step) -> bool:
        return True  # what no other kind claims

    def run_deadline(self, timing: Timing, due_at: float) -> float | None:
        return due_at + timing.redeliver_after  # nobody claimed it by then: published again

    def start(self, task: Task, run: Run, timing: Timing, due_at: float) -> OutboxEntry:
        return publish_entry(task, run, due_at)

    def before_conclude(self, task: Task, run: Run, timing: Timing) -> None:
        return None

    def roll_back(self, task: Task, unit: Unit, timing: Timing, actor: str) -> bool:
        return False

    def cancel_run(self, task: Task, run: Run, request: OperatorRequest) -> bool:
        return False  # its module's command finishes (or is stopped): its outcome routes into rollback

    def cancel_step(self, task: Task, cursor: int, request: OperatorRequest, stop_running: bool) -> None:
        return None  # its runs are in the task: the cancel deals with each

    def reopen_rollback(self, task: Task, unit: Unit, action: str, request: OperatorRequest,
                        ids: Callable[[], str]) -> bool:
        return False

    def pause(self, task: Task, cursor: int, request: OperatorRequest) -> None:
        return None  # a claimed command finishes; what nobody claimed yet the pause withdraws

    def resume(self, task: Task, cursor: int, request: OperatorRequest, ids: Callable[[], str]) -> None:
        return None  # routing dispatches what became ready

    def skip_refused(self, task: Task, run: Run) -> str | None:
        return None  # its run is removed: a claimed command loses its lease and is stopped

    def item_count(self, step: Step) -> int:
        return len(step.Items or [])

    def item_skip_elsewhere(self, cursor: int, item: int) -> str | None:
        return None  # its items are in the task
