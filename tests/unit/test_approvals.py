"""The approval step (common/engine/kinds/approve/): flows.yaml's `approve:` validated with file
and line, the run parked holding no slot with `WaitingFor` naming it, distinct approvers
counted, one rejection failing the step into its task's rollback, roles and the submitter
refused, one decision per person, the timeout per on_timeout, and the generic parts it stands on
(the parked run, the step's actions, its webhook events)."""

from __future__ import annotations

from textwrap import dedent

import pytest

from common.engine.changes import ActRequest, Forbidden, NoSuch, Refusal, Timing, act_on_step, add_notifications, cancel, expire
from common.engine.core.entries import create_task
from common.engine.core.step_doc import STATE_FIELDS
from common.engine.document import NotifyTarget, Task
from common.engine.registry import kind_of
from common.engine.states import RunState, StepState, TaskStatus
from common.engine.views import offered_actions, shown_wait
from common.flows.loader import FlowError, parse_flows
from common.secrets.task_views import masked_task_view
from tests.support.builders import counter_ids

FLOWS = """\
version: 1
task_types:
  drop_db:
    steps:
      - name: ask
        approve: {count: 2, roles: [operator], not_submitter: true, timeout: 4h, on_timeout: reject}
      - name: drop
        after: [ask]
        normal: {module: m, command: drop}
        rollback: {module: m, command: undrop}
"""
OPERATOR = frozenset({"read", "submit", "operator"})


def new_task(text: str = FLOWS, now: float = 100.0) -> Task:
    flow = parse_flows(dedent(text), "flows.yaml").get("drop_db")
    return create_task(task_type="drop_db", steps=flow.steps, parameters={}, timing=Timing(now), ids=counter_ids(),
                       submitted_by="alice")


def decide(task: Task, actor: str, action: str = "approve", roles: frozenset[str] = OPERATOR, now: float = 200.0,
           step: str = "ask") -> Task | Refusal:
    return act_on_step(task, step, action, ActRequest(actor, roles, f"{actor} says {action}", now), Timing(now),
                       ids=counter_ids("x"))


def test_flows_declares_an_approval_step_with_its_rule():
    step = new_task().Steps[0]
    assert step.Kind == "approve" and kind_of(step).name == "approve"
    assert (step.Approve.Count, step.Approve.Roles, step.Approve.NotSubmitter, step.Approve.Timeout,
            step.Approve.OnTimeout) == (2, ["operator"], True, 4 * 3600.0, "reject")
    assert "Decisions" in STATE_FIELDS  # decisions are state: a flow's content hash ignores them


@pytest.mark.parametrize(("rule", "line", "says"), [
    ("{count: 0}", 6, "count"),
    ("{roles: [boss]}", 6, "roles"),
    ("{roles: [read]}", 6, "roles"),  # a read token changes nothing
    ("{timeout: soon}", 6, "duration"),
    ("{on_timeout: approve}", 6, "approve.on_timeout: needs a timeout: add approve.timeout"),
])
def test_a_bad_approve_block_names_its_file_line_and_key(rule, line, says):
    text = FLOWS.replace("{count: 2, roles: [operator], not_submitter: true, timeout: 4h, on_timeout: reject}", rule)
    with pytest.raises(FlowError) as caught:
        parse_flows(dedent(text), "flows.yaml")
    found = [p for p in caught.value.problems if f"flows.yaml:{line}" in p]
    assert found and says in found[0], caught.value.problems


def test_an_approval_step_runs_no_command():
    text = FLOWS.replace("        approve: {count: 2", "        normal: {module: m, command: c}\n        approve: {count: 2")
    with pytest.raises(FlowError) as caught:
        parse_flows(dedent(text), "flows.yaml")
    assert any("flows.yaml:6" in p and "runs no command" in p for p in caught.value.problems), caught.value.problems


def test_the_task_waits_parked_holding_no_slot_and_says_what_for():
    task = new_task()
    [run] = task.Runs
    assert run.State is RunState.PARKED and run.Deadline == 100.0 + 4 * 3600
    assert not task.Outbox  # nothing published: no module claims it
    wait = shown_wait(task)
    assert wait.Kind == "step" and wait.Key == "ask: 2 more approvals by operator"
    assert masked_task_view(task)["WaitingFor"]["Key"] == wait.Key
    assert [a.name for a in offered_actions(task, 0)] == ["approve", "reject"]
    assert [e.Event for e in task.History][-2:] == ["approval_requested", "dispatched"]


def test_two_distinct_approvers_let_the_flow_go_on():
    task = new_task()
    once = decide(task, "bob")
    assert isinstance(once, Task) and once.Runs[0].State is RunState.PARKED
    assert shown_wait(once).Key == "ask: 1 more approval by operator"
    twice = decide(once, "carol")
    assert twice.Steps[0].State is StepState.SUCCEEDED and twice.Steps[0].Message == "approved by bob, carol"
    assert [(d.Actor, d.Decision, d.Reason) for d in twice.Steps[0].Decisions] == [
        ("bob", "approve", "bob says approve"), ("carol", "approve", "carol says approve")]
    assert twice.Runs[0].Cursor == 1 and twice.Runs[0].State is RunState.PENDING  # the next step dispatched
    assert shown_wait(twice) is None and offered_actions(twice, 0) == ()
    given = [(e.Event, e.Actor, e.Message) for e in twice.History if e.Event == "approval_given"]
    assert given == [("approval_given", "bob", "bob says approve"), ("approval_given", "carol", "carol says approve")]


def test_one_person_decides_once_and_the_submitter_and_other_roles_are_refused():
    once = decide(new_task(), "bob")
    again = decide(once, "bob")
    assert type(again) is Refusal and "decided already" in again.reason
    assert type(decide(once, "bob", "reject")) is Refusal
    submitter = decide(once, "alice")
    assert isinstance(submitter, Forbidden) and "submitted the task" in submitter.reason
    reader = decide(once, "dave", roles=frozenset({"read", "submit"}))
    assert isinstance(reader, Forbidden) and "role operator" in reader.reason
    assert isinstance(unknown := decide(once, "bob", "frobnicate"), NoSuch) and unknown.field == "action"
    assert isinstance(unknown := decide(once, "bob", step="nope"), NoSuch) and unknown.field == "step"
    assert isinstance(decide(once, "bob", step="٠"), NoSuch)  # an Arabic-Indic zero is no index
    assert isinstance(unknown := decide(once, "bob", step="drop"), NoSuch) and unknown.field == "action"  # a command step


def test_one_rejection_fails_the_step_and_the_task_rolls_back():
    rejected = decide(decide(new_task(), "bob"), "carol", "reject")
    assert rejected.Steps[0].State is StepState.SKIPPED  # failed; it has nothing to undo
    assert rejected.TaskStatus is TaskStatus.ROLLED_BACK
    assert "rejected by carol: carol says reject" in rejected.TaskMessage
    assert [e.Event for e in rejected.History if e.Event.startswith("approval")] == [
        "approval_requested", "approval_given", "approval_refused"]


def test_the_timeout_rejects_or_approves_as_on_timeout_says():
    late = 100.0 + 4 * 3600 + 1
    timed_out = expire(new_task(), Timing(late), ids=counter_ids("s"))
    assert timed_out.TaskStatus is TaskStatus.ROLLED_BACK and "no decision within 4h: rejected" in timed_out.TaskMessage
    lenient = new_task(FLOWS.replace("on_timeout: reject", "on_timeout: approve"))
    approved = expire(lenient, Timing(late), ids=counter_ids("s"))
    assert approved.Steps[0].State is StepState.SUCCEEDED and approved.Runs[0].Cursor == 1
    assert isinstance(expire(new_task(), Timing(late - 2)), Refusal)  # not yet


def test_a_cancel_ends_the_wait_at_once():
    cancelled = cancel(decide(new_task(), "bob"), "op", "not today", Timing(300.0), ids=counter_ids("c"))
    assert cancelled.TaskStatus is TaskStatus.ROLLED_BACK and cancelled.Steps[0].State is StepState.CANCELLED


def test_webhooks_say_when_approval_is_asked_given_and_refused():
    task = new_task()
    task.Notify = [NotifyTarget(Url="http://hook.example/x")]
    add_notifications(None, task)
    assert [e.Body["Event"] for e in task.Outbox] == ["created", "approval_requested"]
    task.Outbox.clear()
    before = task.before() if hasattr(task, "before") else task.clone()
    given = decide(task, "bob")
    add_notifications(before, given)
    [entry] = given.Outbox
    assert (entry.Body["Event"], entry.Body["Step"], entry.Body["Actor"], entry.Body["Message"]) == (
        "approval_given", "ask", "bob", "bob says approve")


def test_a_task_keeps_its_submitter_only_where_a_step_needs_it():
    # The previous release refuses fields it does not know: a task that needs no submitter is
    # written without one (tests/contract/test_previous_release_reads.py checks the API's tasks).
    assert new_task().SubmittedBy == "alice" and new_task().to_doc()["SubmittedBy"] == "alice"
    lenient = new_task(FLOWS.replace("not_submitter: true", "not_submitter: false"))
    assert lenient.SubmittedBy is None and "SubmittedBy" not in lenient.to_doc()
    assert all(key not in step for step in lenient.to_doc()["Steps"][1:] for key in ("Approve", "Decisions", "Kind"))


def test_a_pause_leaves_the_wait_and_what_it_lets_go_starts_on_resume():
    from common.engine.changes import pause, resume

    once = decide(new_task(), "bob")
    paused = pause(once, "op", "maintenance", Timing(300.0))
    assert paused.Runs[0].State is RunState.PARKED  # like a claimed step: it goes on waiting
    done = decide(paused, "carol", now=400.0)
    assert done.Steps[0].State is StepState.SUCCEEDED and done.Runs == []  # paused: nothing new starts
    resumed = resume(done, "op", "done", Timing(500.0), ids=counter_ids("r"))
    assert resumed.Runs[0].Cursor == 1 and resumed.Runs[0].State is RunState.PENDING
