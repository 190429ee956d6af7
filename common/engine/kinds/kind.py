"""What a kind of step is to the engine: the `StepKind` base class (docs/design/engine.md, "A step
kind is a folder").

The engine asks the kind of a step (common.engine.registry.kind_of, by the step's declared
`Kind`) whatever differs between kinds: routing whether the step opens and which of its units
start, `advance` how a unit's run starts, ends and rolls back, the operators' actions what they
mean for its steps, the surfaces how it is shown. It never tests a step's fields to find out
what it is. The defaults here are a command's, so a kind overrides only what it does its own way.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from common.engine.core.units import AttemptResult, Refusal, Timing, Unit, publish_entry
from common.engine.document import OperatorRequest, OutboxEntry, Run, Step, Task
from common.engine.states import ResultCode, StepState
from common.spec.parts import FlowsPart


@dataclass(frozen=True)
class StepShown:
    """A step as every surface shows it beside its state and name (the task view, `baton get`, the
    console's graph): plain data, so a new kind needs no code of its own there."""

    kind: str
    note: str = ""  # what it does, in one line: "mysql · create_db", "for_each hosts: 12/20", "sub-flow x"
    items: Mapping[str, int] | None = None  # its items by state, as the reader counted them
    total: int | None = None  # how many items it fans out over, once fixed
    done: int | None = None  # of its items, how many succeeded (kept in records: as the reader counted them)
    child: str | None = None  # the child task it runs
    children: tuple[str, ...] = field(default_factory=tuple)  # the child tasks its items run
    wave: str | None = None  # a step in waves: "wave 2 of 4 ended (baking until ...)"
    # How its state reads for its kind where the stored state says less: an approval step that was
    # rejected is stored `failed`, then `skipped` once passed over backward; it reads `rejected`.
    state: str | None = None


@dataclass(frozen=True)
class StepAction:
    """An action people take on a step of this kind (approve, reject): every surface offers it
    from this data alone (one REST route, one CLI command, the console's buttons)."""

    name: str  # as the route and `baton act` spell it: lower case, no spaces
    label: str  # what a button says
    summary: str = ""  # what it does, in one line


@dataclass(frozen=True)
class ActRequest:
    """Who takes a step's action and why: the token's name, the roles it holds (its own and those
    below it), the reason, and when."""

    actor: str
    roles: frozenset[str]
    reason: str
    time: float


class StepKind:
    # The step document's `Kind` of the steps this kind runs.
    name = "command"
    # Its part of flows.yaml: the step keys it owns, their checks, its fields of a template.
    spec: FlowsPart = FlowsPart()
    # The history events of its steps that are also webhook events (and events of the API's
    # stream): a kind declares them here, and common.engine.core.notifications sends them.
    events: tuple[str, ...] = ()
    # The actions people take on its steps (an empty tuple: none).
    actions: tuple[StepAction, ...] = ()

    def bind(self, kinds: Mapping[str, StepKind]) -> None:
        """Once the registry made every kind (common.engine.registry.KINDS): the kinds by name,
        for a kind that runs its units as others (a for_each step's items: commands or children)."""

    # --- routing and dispatch --------------------------------------------------------------------

    def opens(self, step: Step) -> bool:
        """Whether the step fixes its units when routing reaches it (a for_each step: its items)."""
        return False

    def open(self, task: Task, cursor: int, timing: Timing, actor: str) -> str | None:
        """In place: fix the units of step `cursor`, which routing reached (it runs already); why
        it failed opening, or None."""
        return None

    def units_to_start(self, step: Step, cursor: int, busy: StepState, startable: Collection[StepState]) -> list[Unit]:
        """Which of the step's units kept in the task start now in their phase (`busy`: the state
        of one under way; `startable`: the states one may start from)."""
        return []

    def working(self, step: Step) -> bool:
        """Whether the step has work under way that the task's runs do not show (its item records)."""
        return False

    def unit_gated(self, step: Step) -> bool:
        """Whether the gates of a unit (a step's own lock) may hold this step's new runs."""
        return True

    def run_deadline(self, step: Step, timing: Timing, due_at: float) -> float | None:
        """The deadline a new run gets (when the sweeper looks at it again), or None."""
        return due_at + timing.redeliver_after  # nobody claimed it by then: published again

    def start(self, task: Task, run: Run, timing: Timing, due_at: float) -> OutboxEntry | None:
        """In place: the new `run` begins; returns what it owes (a message, a child's creation),
        or None: it parked the run (RunState.PARKED, common.engine.core.parking) and owes nothing."""
        return publish_entry(task, run, due_at)

    def before_conclude(self, task: Task, run: Run, timing: Timing) -> None:
        """In place: what the run's end needs recorded first."""
        return None

    def concludes_own(self, step: Step, run: Run) -> bool:
        """Whether the kind concludes `run` its own way (`conclude_own`) once its retries are spent
        or it succeeded, instead of settling its unit."""
        return False

    def conclude_own(self, task: Task, run: Run, result: AttemptResult, timing: Timing, actor: str) -> str | None:
        """In place: the end of a run the kind concludes its own way; then the engine dispatches a
        new run of its unit ("fetch"), sends the task backward ("backward"), or only routes (None)."""
        raise NotImplementedError

    def first_units(self, step: Step, cursor: int) -> list[Unit]:
        """The units the engine dispatches as the step opens (a source's first page)."""
        return []

    def absorb_output(self, task: Task, run: Run, result: AttemptResult) -> None:
        """In place: where a successful normal run's output goes."""
        task.Parameters.update(result.output)

    def roll_back(self, task: Task, unit: Unit, timing: Timing, actor: str) -> bool:
        """In place: start the unit's rollback the kind's own way; False: dispatch a rollback run."""
        return False

    def needs_submitter(self, step: Step) -> bool:
        """Whether the task keeps who submitted it (`SubmittedBy`) because of this step."""
        return False

    def await_outside(self, task: Task, run: Run, result: AttemptResult, timing: Timing, actor: str) -> AttemptResult | None:
        """In place: the run's command answered "wait for a callback" (`result.callback`). None:
        the run is parked; else the outcome to conclude it with."""
        return AttemptResult(ResultCode.FAILED, f"a {self.name} step's command may not wait for a callback",
                             retryable=False)

    def lease_lapsed(self, task: Task, run: Run, timing: Timing) -> AttemptResult | None:
        """In place: the outcome a claimed run whose lease lapsed ends with instead of losing its
        worker's attempt (an answer kept for it meanwhile), or None."""
        return None

    def lapse(self, task: Task, run: Run, timing: Timing) -> AttemptResult:
        """How a parked run (RunState.PARKED) of this kind ends when its deadline passes."""
        return AttemptResult(ResultCode.TIMED_OUT, "nobody answered before its deadline", retryable=False)

    def act(self, task: Task, run: Run, action: str, request: ActRequest) -> AttemptResult | Refusal | None:
        """In place: `request` takes the step's `action` on its parked `run` (the caller found
        both and checked the action is one of `actions`). The run's outcome when this ends it,
        None when it waits on (the action is recorded in the step), or why it is refused (a
        `Forbidden` for who asks). The caller concludes the run as a module's outcome would."""
        return Refusal(f"a {self.name} step takes no action {action!r}")

    def waits_unparked(self, task: Task, cursor: int) -> bool:
        """Whether step `cursor` waits for one of its `actions` with no run parked (a paused wave
        of a for_each step): the actions are offered, and `act_unparked` takes them."""
        return False

    def act_unparked(self, task: Task, cursor: int, action: str, request: ActRequest, timing: Timing,
                     ids: Callable[[], str]) -> Refusal | None:
        """In place: `request` takes `action` on step `cursor`, which `waits_unparked`; why not, or None."""
        return Refusal(f"a {self.name} step takes no action {action!r}")

    def child_ended(self, task: Task, body: dict, timing: Timing, ids: Callable[[], str]) -> Task | Refusal | None:
        """A child task of step `body["Cursor"]` ended that is none of its units' (a wave's check):
        the change's answer, or None: a unit's child, concluded as a sub-flow's."""
        return None

    def on_backward(self, task: Task, cursor: int, now: float) -> None:
        """In place: what the task turning backward does to step `cursor` beyond its runs."""
        return None

    def on_task_end(self, task: Task, now: float) -> None:
        """In place, once per kind: what the task's final change owes because of this kind."""
        return None

    def reset(self, step: Step) -> None:
        """In place: the kind's own fields back to a step never reached (an operator's retry)."""
        return None

    # --- an operator's actions -----------------------------------------------------------------

    def cancel_run(self, task: Task, run: Run, request: OperatorRequest) -> bool:
        """In place: an operator's cancel of the task, for this kind's claimed `run`, the kind's
        own way; False: the engine's (the run finishes, or a cancel that stops running runs
        removes it)."""
        return False  # its module's command finishes (or is stopped): its outcome routes into rollback

    def cancel_step(self, task: Task, cursor: int, request: OperatorRequest, stop_running: bool) -> None:
        """In place: what an operator's cancel does to step `cursor` beyond its runs in the task
        (the runs of items kept in records of their own: withdrawn, and stopped with
        `stop_running`)."""
        return None  # its runs are in the task: the cancel deals with each

    def reopen_rollback(self, task: Task, unit: Unit, action: str, request: OperatorRequest,
                        ids: Callable[[], str]) -> bool:
        """In place: an operator's retry-rollback (`action` "retry") or compensate ("compensate")
        of `unit`, whose rollback failed, the kind's own way; False: the engine's (the unit's
        rollback is dispatched again, or the unit marked compensated)."""
        return False

    def pause(self, task: Task, cursor: int, request: OperatorRequest) -> None:
        """In place: what an operator's pause of the task does to step `cursor` beyond the
        task's own `Paused` (which holds every new unit back)."""
        return None  # a claimed command finishes; what nobody claimed yet the pause withdraws

    def resume(self, task: Task, cursor: int, request: OperatorRequest, ids: Callable[[], str]) -> None:
        """In place: what an operator's resume does to step `cursor` beyond clearing `Paused`."""
        return None  # routing dispatches what became ready

    def redrive(self, task: Task, cursor: int, request: OperatorRequest, ids: Callable[[], str]) -> None:
        """In place: what an operator's redrive of a held task does to step `cursor` (its failed
        units run again) beyond lifting the hold."""
        return None

    def skip_refused(self, task: Task, run: Run) -> str | None:
        """Why an operator may not skip the unit of this kind's failing `run`, or None: they may."""
        return None  # its run is removed: a claimed command loses its lease and is stopped

    def item_count(self, step: Step) -> int:
        """How many items the step fans out over (0: none fixed yet, or not a for_each step)."""
        return len(step.Items or [])

    def item_skip_elsewhere(self, step: Step, cursor: int, item: int) -> str | None:
        """Why item `item` of step `cursor` is not skipped by a change of the task (it is kept
        apart, and skipped by a change of its own), or None: the task holds it."""
        return None  # its items are in the task

    # --- how it is shown ---------------------------------------------------------------------------

    def shown_state(self, step: Step) -> str | None:
        """How the step's state reads for this kind where the stored one says less (StepShown.state),
        or None: cheap, as a task list asks it of every step."""
        return None

    def describe(self, step: Step, counts: Mapping[str, int] | None = None) -> StepShown:
        """The step as plain data for every surface (`counts`: its items by state, as a reader
        found them, when they are kept in records of their own)."""
        return StepShown(kind=self.name, note=f"{step.NormalModule} · {step.NormalCommand}")

    def describe_run(self, task: Task, run: Run) -> str | None:
        """What a run of the step waits for in a state of the kind's own (a child task), as the
        task view's `RunWaits` says it, or None."""
        return None

    def describe_wait(self, step: Step, run: Run) -> str:
        """What a parked run of the step waits for, as `WaitingFor` shows it (its `Key`)."""
        return self.describe(step).note

