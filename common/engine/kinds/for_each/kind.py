"""A `for_each` step (docs/design/graph-and-routing.md, docs/design/item-records.md): it fans out
over a list parameter, fixed when routing reaches the step, and each item runs as the step would
without `for_each`: a command, or a child task when the step names a flow.

Its items are kept inline in `Items` (each a unit of its own that routing starts, at most
`max_parallel` at once), or, for a command step without a step lock, in records of their own: then
routing sees the step as one unit, busy while `ItemsOpen`, and its items run and roll back
through their records (common.engine.kinds.for_each.records). For a unit of an inline item, the
kind asks the kind its items run as (the registry hands it the kinds: `bind`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from common.engine.core.units import AttemptResult, Refusal, Timing, Unit, record, set_unit_state
from common.engine.document import OperatorRequest, OutboxEntry, Run, Step, Task
from common.engine.kinds.for_each.budget import describe as describe_budget
from common.engine.kinds.for_each.extending import extensions
from common.engine.kinds.for_each.fields import StepItem
from common.engine.kinds.for_each.item_limits import over_limit
from common.engine.kinds.for_each.item_views import keeps_records
from common.engine.kinds.for_each.spec import ForEachPart
from common.engine.kinds.kind import ActRequest, StepAction, StepKind, StepShown
from common.engine.states import ResultCode, StepState, TaskStatus


def _records():  # type: ignore[no-untyped-def]
    """The changes of a step over records: imported when one changes, so a reader (`baton get`)
    that only shows a step does not load them."""
    from common.engine.kinds.for_each import records

    return records


class ForEachKind(StepKind):
    name = "for_each"
    spec = ForEachPart()

    def __init__(self) -> None:
        self._unit_kinds: dict[str, StepKind] = {}  # "command", "sub_flow": what one item runs as

    def bind(self, kinds: Mapping[str, StepKind]) -> None:
        self._unit_kinds = {name: kinds[name] for name in ("command", "sub_flow")}

    @property
    def actions(self) -> tuple[StepAction, ...]:  # type: ignore[override]
        """Its extensions' (a paused wave's continue)."""
        return tuple(action for extension in extensions() for action in extension.actions)

    def _items(self, step: Step) -> StepKind:
        return self._unit_kinds["sub_flow" if step.Flow is not None else "command"]

    # --- routing and dispatch --------------------------------------------------------------------

    def waits_unparked(self, task: Task, cursor: int) -> bool:
        return any(extension.waits_unparked(task, cursor) for extension in extensions())

    def act_unparked(self, task: Task, cursor: int, action: str, request: ActRequest, timing: Timing,
                     ids: Callable[[], str]) -> Refusal | None:
        for extension in extensions():
            if any(offered.name == action for offered in extension.actions):
                return extension.act_unparked(task, cursor, action, request, timing, ids)
        return super().act_unparked(task, cursor, action, request, timing, ids)

    def opens(self, step: Step) -> bool:
        return True

    def open(self, task: Task, cursor: int, timing: Timing, actor: str) -> str | None:
        """Fix the step's items from its list parameter, as it is at this moment."""
        step = task.Steps[cursor]
        own = next((extension for extension in extensions() if extension.opens_own(step)), None)
        if own is not None:  # an extension fixes its items (a source: a page at a time)
            failed = own.open_own(task, cursor, timing, actor)
            if failed is None:
                self._opened(step)
            return failed
        values = task.Parameters.get(step.ForEach or "")
        too_long = over_limit(step, values)
        if not isinstance(values, list) or too_long:
            step.Items = []
            return f"for_each parameter {step.ForEach!r} {too_long or 'is not a list'}"
        record(task, timing.now, "items_fixed", actor=actor, message=f"{len(values)} items", unit=(cursor, None))
        if values and _records().records_for(step):
            _records().open_records(task, cursor, list(values), timing.now)
            self._opened(step)
            return None
        records_only = any(extension.needs_records(step) for extension in extensions())
        if (step.Tolerate is not None or step.OnFailure is not None or records_only) and values:
            step.Items = []
            return "tolerate, on_failure and waves need its items in records: BATON_ITEM_RECORDS is false here"
        step.Items = [StepItem(Value=value) for value in values]
        if not values:  # nothing to do: succeeded at once, with an empty list of outputs
            step.Code, step.TimeEnd = ResultCode.OK, timing.now
            set_unit_state(task, (cursor, None), StepState.SUCCEEDED)
            task.Parameters[step.Name] = []
        return None

    def _opened(self, step: Step) -> None:
        for extension in extensions():
            extension.opened(step)

    def units_to_start(self, step: Step, cursor: int, busy: StepState, startable: Collection[StepState]) -> list[Unit]:
        """In item order, keeping at most `MaxParallel` busy."""
        assert step.Items is not None
        limit = step.MaxParallel or len(step.Items)
        running = sum(1 for item in step.Items if item.State is busy)
        chosen: list[Unit] = []
        for index, item in enumerate(step.Items):
            if running >= limit:
                break
            if item.State in startable:
                chosen.append((cursor, index))
                running += 1
        return chosen

    def working(self, step: Step) -> bool:
        return step.ItemsOpen

    def unit_gated(self, step: Step) -> bool:
        return self._items(step).unit_gated(step)

    def run_deadline(self, step: Step, timing: Timing, due_at: float) -> float | None:
        return self._items(step).run_deadline(step, timing, due_at)

    def start(self, task: Task, run: Run, timing: Timing, due_at: float) -> OutboxEntry:
        return self._items(task.Steps[run.Cursor]).start(task, run, timing, due_at)

    def before_conclude(self, task: Task, run: Run, timing: Timing) -> None:
        self._items(task.Steps[run.Cursor]).before_conclude(task, run, timing)

    def concludes_own(self, step: Step, run: Run) -> bool:
        return any(extension.concludes_own(step, run) for extension in extensions())  # a page of its source

    def conclude_own(self, task: Task, run: Run, result: AttemptResult, timing: Timing, actor: str) -> str | None:
        step = task.Steps[run.Cursor]
        own = next(extension for extension in extensions() if extension.concludes_own(step, run))
        return own.conclude_own(task, run, result, timing, actor)

    def first_units(self, step: Step, cursor: int) -> list[Unit]:
        return [unit for extension in extensions() for unit in extension.first_units(step, cursor)]

    def child_ended(self, task: Task, body: dict[str, Any], timing: Timing,
                    ids: Callable[[], str]) -> Task | Refusal | None:
        for extension in extensions():  # a wave's check
            ended = extension.child_ended(task, body, timing, ids)
            if ended is not None:
                return ended
        return None

    def absorb_output(self, task: Task, run: Run, result: AttemptResult) -> None:
        """An item keeps its output until the whole step is done, then the list goes under the
        step's name, in item order (docs/design/graph-and-routing.md, "Outputs")."""
        step = task.Steps[run.Cursor]
        if run.Item is None:  # no item runs: the step's own unit (none runs today) reports as a command
            task.Parameters.update(result.output)
            return
        assert step.Items is not None
        step.Items[run.Item].Output = dict(result.output)
        if step.State is StepState.SUCCEEDED:
            task.Parameters[step.Name] = [item.Output for item in step.Items]  # its outcome: core/step_summary.py

    def roll_back(self, task: Task, unit: Unit, timing: Timing, actor: str) -> bool:
        step = task.Steps[unit[0]]
        if keeps_records(step):
            _records().start_rollback(task, unit[0], timing.now)  # each chain's first applied item, via the outbox
            return True
        return self._items(step).roll_back(task, unit, timing, actor)

    def on_backward(self, task: Task, cursor: int, now: float) -> None:
        task.Held = None  # going backward, nothing waits for an operator's redrive any more
        for extension in extensions():  # a wave's check cancelled; a source fetches no more pages
            extension.on_backward(task, cursor, now)
        _records().withdraw_unclaimed(task, cursor, now)  # the items in records: their relay does it

    def reset(self, step: Step) -> None:
        # A step over item records: the new generation opens records of its own (the old ones
        # keep their generation in their key, so nothing of them is read again).
        step.Items, step.ItemStore, step.ItemCount, step.ItemsOpen, step.ItemsReopen = None, None, None, False, None
        step.FailedItems, step.ToleratedItems = None, None
        for extension in extensions():
            extension.reset(step)
        self._items(step).reset(step)

    def on_task_end(self, task: Task, now: float) -> None:
        """A task that succeeded with items failed within their steps' budgets says so."""
        failed = sum(step.FailedItems or 0 for step in task.Steps)
        if task.TaskStatus is TaskStatus.SUCCESS and failed:
            task.FailedItems = failed
            steps = ", ".join(step.Name for step in task.Steps if step.FailedItems)
            task.TaskMessage = f"succeeded with {failed} failed item{'s' if failed > 1 else ''} ({steps})"

    # --- an operator's actions -----------------------------------------------------------------

    def cancel_run(self, task: Task, run: Run, request: OperatorRequest) -> bool:
        return self._items(task.Steps[run.Cursor]).cancel_run(task, run, request)

    def cancel_step(self, task: Task, cursor: int, request: OperatorRequest, stop_running: bool) -> None:
        for extension in extensions():  # a wave's check is the step's running work then
            extension.cancel_step(task, cursor, request, stop_running)
        if stop_running:  # the claimed item runs are stopped by the entry that withdraws the rest
            _records().stop_claimed(task, cursor, request)

    def reopen_rollback(self, task: Task, unit: Unit, action: str, request: OperatorRequest,
                        ids: Callable[[], str]) -> bool:
        if not keeps_records(task.Steps[unit[0]]):
            return False
        # Its items' records hold the failures: the entry's relay retries or compensates them.
        _records().reopen_rollback(task, unit[0], action, request.Actor, request.Reason, request.Time, ids)
        return True

    def pause(self, task: Task, cursor: int, request: OperatorRequest) -> None:
        self._items(task.Steps[cursor]).pause(task, cursor, request)

    def resume(self, task: Task, cursor: int, request: OperatorRequest, ids: Callable[[], str]) -> None:
        step = task.Steps[cursor]
        if keeps_records(step):  # the items a pause held back (their relay starts them)
            _records().resume_records(task, cursor, request.Time, ids)
            return
        self._items(step).resume(task, cursor, request, ids)

    def redrive(self, task: Task, cursor: int, request: OperatorRequest, ids: Callable[[], str]) -> None:
        from common.engine.kinds.for_each.hold import redrive_records  # loaded by a change only

        redrive_records(task, cursor, request, ids)

    def describe_run(self, task: Task, run: Run) -> str | None:
        return self._items(task.Steps[run.Cursor]).describe_run(task, run)  # an item's child task

    def skip_refused(self, task: Task, run: Run) -> str | None:
        return self._items(task.Steps[run.Cursor]).skip_refused(task, run)

    def item_count(self, step: Step) -> int:
        return step.ItemCount or 0 if keeps_records(step) else len(step.Items or [])

    def item_skip_elsewhere(self, step: Step, cursor: int, item: int) -> str | None:
        if not keeps_records(step):
            return None  # its items are in the task
        # a change of its record: common.engine.kinds.for_each.item_actions.skip_item
        return f"item {item} of step {cursor} is kept in a record of its own: skip it through its record"

    # --- how it is shown ---------------------------------------------------------------------------

    def describe(self, step: Step, counts: Mapping[str, int] | None = None) -> StepShown:
        items = step.Items
        total = len(items) if items is not None else step.ItemCount
        if items is not None:
            done: int | None = sum(1 for item in items if item.State is StepState.SUCCEEDED)
        else:  # kept in records: counted by the reader (none given: not shown)
            done = counts.get(StepState.SUCCEEDED.value, 0) if counts is not None and total is not None else None
        fanned = f"for_each {step.ForEach}" + (f": {done}/{total}" if done is not None else "")
        for extension in extensions():  # what it fans out over, said its own way (a source's)
            fanned = extension.describe_items(step, done, total) or fanned
        if step.Tolerate is not None:
            fanned += f", tolerates {describe_budget(step.Tolerate)}"
        if step.FailedItems:
            fanned += f", {step.FailedItems} failed"
        more = {field: text for extension in extensions() for field, text in extension.describe_more(step, counts).items()}
        for text in more.values():  # a wave's
            fanned += f", {text}"
        unit = self._items(step).describe(step)  # what each item runs, said after the count
        return StepShown(
            kind=self.name,
            note=f"{fanned} · {unit.note}" if unit.kind != "command" else fanned,
            items=dict(counts) if counts is not None else None,
            total=total,
            done=done,
            children=tuple(item.ChildTaskId for item in items or () if item.ChildTaskId),
            **more,
        )
