"""The item relay's part for a page of a source (docs/design/item-sources.md): the page's records
are inserted at the indexes its page fixed; its items whose predecessor in their chain, in an
earlier page, is done already start now (that predecessor looked for its successor before the
page was stored). A mixin of common.relay.items.ItemRelay."""

from __future__ import annotations


from common.engine.document import Task
from common.engine.states import DONE_FORWARD, StepState
from common.engine.views import chain_count
from common.relay.item_relay_part import RelayPart

# A predecessor failed within its budget lets its chain go on once its own rollback started.
TOLERATED = (StepState.ROLLING_BACK, StepState.ROLLED_BACK)


class SourcePages(RelayPart):
    def _start_page_chains(self, task: Task, cursor: int, first: int, count: int) -> None:
        """Start each item of the page `first ... first + count - 1` whose predecessor is in an
        earlier page and done. The predecessor wrote its record before it looked for this one;
        this page was inserted before these reads: one of the two sees the other, and a start is
        one compare-and-set (`waiting -> pending`), done once."""
        chains = chain_count(task, cursor)
        for index in range(max(first, chains), min(first + count, first + chains)):
            before = self._items.get_item(task.TaskId, task.Generation, cursor, index - chains)
            if before is None or not (before.State in DONE_FORWARD or (before.Tolerated and before.State in TOLERATED)):
                continue
            waiting = self._items.get_item(task.TaskId, task.Generation, cursor, index)
            if waiting is not None and waiting.State is StepState.WAITING:
                self._start_next(task, waiting)
