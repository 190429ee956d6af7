"""A task's rate, the in-place part the gate and its changes use (docs/design/rates.md): asking
for a slot (the wait and its outbox entry), asking again later, and what the task's end and an
operator's retry do to it. Pure."""

from __future__ import annotations

from typing import Any, NamedTuple

from common.engine.codes import OutboxKind, WaitKind
from common.engine.document import OutboxEntry, Task, WaitCondition
from common.engine.core.key_templates import LockKeyError, render_key
from common.engine.gates.rate.documents import TaskRate
from common.engine.states import RateState
from common.engine.gates.start_at.gate import start_due
from common.engine.states import RATES, TaskStatus, check_transition, set_waiting
from common.engine.core.units import record

RATE_WAIT = WaitKind.RATE


class RateAsk(NamedTuple):
    """What a task asks of the rate table: its rendered key, `limit` starts per `per` seconds."""

    key: str
    limit: int
    per: float


def child_ask(body: dict[str, Any]) -> RateAsk | None:
    """The rate a child task asks for, from its parent's start entry: its type's, keyed by the
    child's parameters (as its lock is); a key left without a value keys it by the template."""
    template = body.get("Rate")
    if not template:
        return None
    try:
        key = render_key(template["Key"], body["Parameters"], body.get("SecretParameters") or ())
    except LockKeyError:
        key = template["Key"]
    return RateAsk(key, int(template["Limit"]), float(template["Per"]))


def per_text(per: float) -> str:
    """"60s", "1.5s": a window as flows.yaml writes it."""
    return f"{int(per)}s" if float(per).is_integer() else f"{per:g}s"


def described(rate: TaskRate) -> str:
    """"host:db1: 10 per 60s": for the wait, the history and logs."""
    return f"{rate.Key}: {rate.Limit} per {per_text(rate.Per)}"


def waiting_for_rate(task: Task, key: str | None = None) -> bool:
    """The task waits for a slot (of `key`, when given)."""
    rate = task.Rate
    return (rate is not None and rate.State is RateState.WAITING and (key is None or rate.Key == key)
            and task.WaitingFor is not None and task.WaitingFor.Kind is RATE_WAIT
            and task.TaskStatus is TaskStatus.NOT_STARTED)


def defer_rate(task: Task, ask: RateAsk) -> None:
    """In place, at the task's creation: it will ask for a slot when its gate opens."""
    task.Rate = TaskRate(Key=ask.key, Limit=ask.limit, Per=ask.per)


def request_slot(task: Task, now: float) -> None:
    """In place: the task waits for a slot; its outbox asks the rate table, at once or at its
    delayed start (a slot is its start: never taken before the task may start)."""
    rate = task.Rate
    assert rate is not None
    move_rate(rate, RateState.WAITING)
    rate.Since = rate.NextAt = None
    set_waiting(task, WaitCondition(Kind=RATE_WAIT, Key=rate.Key, Since=now))
    ask_at(task, start_due(task, now))
    record(task, now, "rate_waiting", actor="oss", message=f"waiting for a start slot of rate {described(rate)}")


def ask_at(task: Task, due: float) -> None:
    """In place: the one `rate_take` entry, due at `due`. Its id is new each time, so the
    mark-sent of the entry just applied never removes the one that replaces it."""
    rate = task.Rate
    assert rate is not None
    asked = [e.DispatchId.rpartition(":")[2] for e in task.Outbox if e.Kind is OutboxKind.RATE_TAKE]
    seq = max((int(n) for n in asked if n.isdigit()), default=-1) + 1
    drop_rate_entries(task)
    body = {"Key": rate.Key, "Limit": rate.Limit, "Per": rate.Per, "TaskId": task.TaskId,
            "Generation": task.Generation}
    task.Outbox.append(OutboxEntry(DispatchId=f"{task.TaskId}:rate:g{task.Generation}:{seq}",
                                   Kind=OutboxKind.RATE_TAKE, Body=body, DueAt=due))


def move_rate(rate: TaskRate, new: RateState) -> None:
    """In place: a task's rate changes state (common.engine.states.RATE_TRANSITIONS)."""
    check_transition(RATES, rate.State, new)
    rate.State = new


def drop_rate_entries(task: Task) -> None:
    task.Outbox = [e for e in task.Outbox if e.Kind is not OutboxKind.RATE_TAKE]


def leave_wait(task: Task) -> None:
    """In place, from the task's end (cancelled while it waited): nothing is held in the table,
    so leaving is only forgetting the wait and the pending ask."""
    if task.WaitingFor is not None and task.WaitingFor.Kind is RATE_WAIT:
        set_waiting(task, None)
    drop_rate_entries(task)
    if task.Rate is not None:
        task.Rate.NextAt = None
