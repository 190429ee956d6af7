"""A `for_each` step's source as an extension of the kind (docs/design/kind-extensions.md): the
step opens without items, fetches them a page at a time (each page a run of the step's own unit)
and says how far it got."""

from __future__ import annotations

from common.engine.core.units import AttemptResult, Timing, Unit
from common.engine.document import Run, Step, Task
from common.engine.kinds.for_each.extending import ForEachExtension
from common.engine.states import Phase


def _paging():  # type: ignore[no-untyped-def]
    """The changes of a step whose items come from a source: imported when one changes."""
    from common.engine.kinds.for_each.source import paging

    return paging


class SourceExtension(ForEachExtension):
    order = 20

    def opens_own(self, step: Step) -> bool:
        return step.Source is not None  # its items come a page at a time (docs/design/item-sources.md)

    def open_own(self, task: Task, cursor: int, timing: Timing, actor: str) -> str | None:
        from common.engine.kinds.for_each.records import records_for  # a change's: a reader loads none

        step = task.Steps[cursor]
        if not records_for(step):
            step.Items = []
            return "a source's items need records: BATON_ITEM_RECORDS is false here"
        _paging().open_source(task, cursor, timing, actor)
        return None

    def first_units(self, step: Step, cursor: int) -> list[Unit]:
        return [(cursor, None)] if step.Source is not None and step.Paging is not None else []  # its first page

    def concludes_own(self, step: Step, run: Run) -> bool:
        return step.Source is not None and run.Item is None and run.Phase is Phase.NORMAL  # a page of its source

    def conclude_own(self, task: Task, run: Run, result: AttemptResult, timing: Timing, actor: str) -> str | None:
        return _paging().conclude_page(task, run, result, timing, actor)  # type: ignore[no-any-return]

    def on_backward(self, task: Task, cursor: int, now: float) -> None:
        if task.Steps[cursor].Source is not None:  # no page is fetched any more
            _paging().stop_fetching(task, cursor, now, "backward")

    def reset(self, step: Step) -> None:
        step.Paging = None

    def describe_items(self, step: Step, done: int | None, total: int | None) -> str | None:
        """The items so far, and the count the source reported while it pages."""
        if step.Source is None:
            return None
        paging = step.Paging
        fanned = f"for_each source {step.Source.Module}.{step.Source.Command}" + (
            f": {done}/{total}" if done is not None else "")
        if paging is None or (paging.Page == 0 and not paging.Done):  # no page came yet (a dry-run plan)
            fanned += " (count unknown until its source runs)"
        elif not paging.Done:
            fanned += f" (paging: {paging.Fetched} fetched" + (
                f" of {paging.Total})" if paging.Total is not None else ", count unknown)")
        return fanned


EXTENSION = SourceExtension()
