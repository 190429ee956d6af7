"""The hooks a `for_each` step's extensions answer (its waves, its source: each a folder of
for_each/ with an `extension.py`), and the extensions found. The kind, its item records and its
budget ask every extension in turn and name none (docs/design/kind-extensions.md). The defaults
change nothing: an extension answers only the hooks it needs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from common.engine.core.units import AttemptResult, Refusal, Timing, Unit
from common.engine.document import OperatorRequest, Run, Step, Task
from common.engine.kinds.extension import KindExtension, lazily
from common.engine.kinds.kind import ActRequest, StepAction


class ForEachExtension(KindExtension):
    # The actions people take on a step it governs (taken by `act_unparked`).
    actions: tuple[StepAction, ...] = ()

    # --- opening and routing -------------------------------------------------------------------

    def opens_own(self, step: Step) -> bool:
        """Whether it fixes the step's items itself when the step opens (a source: a page at a time)."""
        return False

    def open_own(self, task: Task, cursor: int, timing: Timing, actor: str) -> str | None:
        """In place: open step `cursor` its own way; why it failed opening, or None."""
        return None

    def opened(self, step: Step) -> None:
        """In place: the step's items were fixed in records (or their first page is on its way)."""
        return None

    def needs_records(self, step: Step) -> bool:
        """Whether the step needs its items in records of their own."""
        return False

    def first_units(self, step: Step, cursor: int) -> list[Unit]:
        """The units dispatched as the step opens (a source's first page)."""
        return []

    def concludes_own(self, step: Step, run: Run) -> bool:
        """Whether it concludes `run` its own way (a page of a source)."""
        return False

    def conclude_own(self, task: Task, run: Run, result: AttemptResult, timing: Timing, actor: str) -> str | None:
        raise NotImplementedError

    def count_known(self, task: Task, cursor: int, now: float, final: bool) -> None:
        """In place: more of the step's items are known (a source's page; `final`: no more come)."""
        return None

    # --- its items -----------------------------------------------------------------------------

    def item_may_start(self, step: Any, item: int) -> bool:
        """Whether item `item` may start now (its wave opened)."""
        return True

    def has_budget(self, step: Step, item: int) -> bool:
        """Whether a failure budget of its own covers item `item` (its wave's)."""
        return False

    def refuses_place(self, step: Step, item: int, taken: list[int]) -> str | None:
        """Why `item`, failed for good, may not take a place in its own budget (None: it may)."""
        return None

    def child_ended(self, task: Task, body: dict[str, Any], timing: Timing,
                    ids: Callable[[], str]) -> Task | Refusal | None:
        """A child task the step runs of its own (not an item's: a wave's check) ended: the
        change's answer, or None: not one of its own."""
        return None

    # --- people and the task's turns -----------------------------------------------------------

    def waits_unparked(self, task: Task, cursor: int) -> bool:
        return False

    def act_unparked(self, task: Task, cursor: int, action: str, request: ActRequest, timing: Timing,
                     ids: Callable[[], str]) -> Refusal | None:
        return Refusal(f"a for_each step takes no action {action!r}")

    def on_backward(self, task: Task, cursor: int, now: float) -> None:
        return None

    def cancel_step(self, task: Task, cursor: int, request: OperatorRequest, stop_running: bool) -> None:
        return None

    def reset(self, step: Step) -> None:
        """In place: its fields of the step back to a step never reached."""
        return None

    # --- how it is shown -----------------------------------------------------------------------

    def describe_items(self, step: Step, done: int | None, total: int | None) -> str | None:
        """What the step fans out over, in place of "for_each <parameter>: done/total", or None."""
        return None

    def describe_more(self, step: Step, counts: Mapping[str, int] | None) -> dict[str, str]:
        """What it adds to the step's note, by the `StepShown` field it fills too ("wave")."""
        return {}


extensions: Callable[[], tuple[ForEachExtension, ...]] = lazily("common.engine.kinds.for_each")
