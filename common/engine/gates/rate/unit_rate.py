"""A step's own rate (docs/design/rates.md, "Step rates"): each attempt of a unit's normal phase
takes a start slot of the step's key before it is published. The run waits in state
`waiting_rate` (no deadline, nothing published) and the outbox asks the rate table, as a task's
own rate does; the member is the run's dispatch id, so each attempt is one slot and a relay's
repeat of an ask gets the same one. Pure: the gate and the relay's changes edit a task in place
or answer a new one."""

from __future__ import annotations

from common.engine.codes import OutboxKind, WaitKind
from common.engine.core.unit_parameters import command_parameters
from common.engine.core.units import Refusal, Timing, publish_entry, record
from common.engine.document import OutboxEntry, Run, Task, WaitCondition
from common.engine.core.key_templates import LockKeyError, render_key
from common.engine.gates.rate.task_rate import per_text
from common.engine.states import Phase, RunState, move_run


def must_wait(task: Task, run: Run) -> bool:
    """A normal run of a step that declares a rate."""
    return run.Phase is Phase.NORMAL and task.Steps[run.Cursor].Rate is not None


def ask_id(run: Run, seq: int) -> str:
    return f"{run.DispatchId}:rate:{seq}"


def wait_for_slot(task: Task, run: Run, due_at: float) -> None:
    """Instead of publishing: the run waits, and the outbox asks the rate table for a slot."""
    template = task.Steps[run.Cursor].Rate
    assert template is not None
    try:
        key = render_key(template.Key, command_parameters(task, run.Cursor, run.Item), task.SecretParameters)
    except LockKeyError:
        key = template.Key  # checked by the loader; a parameter left without value keys by the template
    move_run(run, RunState.WAITING_RATE)
    run.Deadline = None
    _ask(task, run, key, template.Limit, template.Per, due_at, 0)
    record(task, due_at, "rate_waiting", run, actor="rate",
           message=f"waiting for a start slot of rate {key}: {template.Limit} per {per_text(template.Per)}")


def _ask(task: Task, run: Run, key: str, limit: int, per: float, due: float, seq: int) -> None:
    body = {"Key": key, "Limit": limit, "Per": per, "TaskId": task.TaskId, "Generation": task.Generation,
            "DispatchId": run.DispatchId}
    task.Outbox.append(OutboxEntry(DispatchId=ask_id(run, seq), Kind=OutboxKind.RATE_TAKE, Body=body, DueAt=due))


def slot_wait(task: Task, run: Run) -> WaitCondition | None:
    """What a run waiting for its step's slot waits for, as a reader is shown it: the rendered key
    its ask names, and `Until` the next free slot once the rate table answered that none was."""
    if run.State is not RunState.WAITING_RATE:
        return None
    prefix = f"{run.DispatchId}:rate:"
    ask = next((e for e in task.Outbox if e.DispatchId.startswith(prefix)), None)
    template = task.Steps[run.Cursor].Rate
    key = ask.Body.get("Key") if ask is not None else template.Key if template is not None else None
    deferred = ask is not None and not ask.DispatchId.endswith(":rate:0")
    return WaitCondition(Kind=WaitKind.RATE, Key=key, Since=run.Since or 0.0, Until=ask.DueAt if deferred else None)


def _waiting(task: Task, dispatch_id: str) -> Run | None:
    run = task.run(dispatch_id)
    return run if run is not None and run.State is RunState.WAITING_RATE else None


def _drop_asks(task: Task, dispatch_id: str) -> list[int]:
    """In place: the run's asks leave the outbox; their sequence numbers."""
    prefix = f"{dispatch_id}:rate:"
    seqs = [int(e.DispatchId[len(prefix):]) for e in task.Outbox if e.DispatchId.startswith(prefix)]
    task.Outbox = [e for e in task.Outbox if not e.DispatchId.startswith(prefix)]
    return seqs


def unit_rate_taken(task: Task, dispatch_id: str, key: str, at: float, timing: Timing) -> Task | Refusal:
    """The rate table gave the run the slot at `at`: it is published."""
    if _waiting(task, dispatch_id) is None:
        return Refusal("no run waits for a slot under this dispatch")
    new = task.clone()
    run = new.run(dispatch_id)
    assert run is not None
    move_run(run, RunState.PENDING)
    run.Since = timing.now
    run.Deadline = timing.now + timing.redeliver_after
    _drop_asks(new, dispatch_id)
    new.Outbox.append(publish_entry(new, run, timing.now))
    record(new, at, "rate_taken", run, actor="rate", message=f"took a start slot of rate {key}")
    return new


def unit_rate_deferred(task: Task, dispatch_id: str, key: str, limit: int, per: float,
                       next_at: float) -> Task | Refusal:
    """No slot free: the run asks again at `next_at`, under a new entry id (the mark-sent of the
    one just applied must not remove it)."""
    run = _waiting(task, dispatch_id)
    if run is None:
        return Refusal("no run waits for a slot under this dispatch")
    new = task.clone()
    run = new.run(dispatch_id)
    assert run is not None
    seq = max(_drop_asks(new, dispatch_id), default=-1) + 1
    _ask(new, run, key, limit, per, next_at, seq)
    return new
