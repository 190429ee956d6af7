"""Webhook entries of status changes (common.engine.core.notifications): written with the change, masked."""

import pytest

from common.errors import FlowError
from common.flows import parse_flows
from common.engine.document import NotifyTarget, StepMessage
from common.engine.core.notifications import WEBHOOK, add_notifications, postpone, task_events
from common.engine.operator.actions import cancel
from common.engine.states import ResultCode, TaskStatus
from common.engine.core.entries import AttemptResult, Refusal, Timing, claim, create_task, finish_attempt
from oss.services.tasks import notify_targets
from common.settings import load_settings
from tests.support.builders import counter_ids, make_step, only_run

SECRET = "hunter2-very-secret"


def new_task(targets):
    task = create_task(task_type="t", steps=[make_step("a"), make_step("b")],
                       parameters={"name": "x", "password": SECRET, "note": f"pw {SECRET}"},
                       secret_parameters=["password"], timing=Timing(100.0), ids=counter_ids())
    task.Notify = targets
    add_notifications(None, task)
    return task


def changed(before, change):
    """What common.store.tasks.mutate writes: the change, a new version, its webhook entries."""
    after = change(before)
    assert not isinstance(after, Refusal), after
    after.Version = before.Version + 1
    add_notifications(before, after)
    return after


def step(task, result, now):
    run = only_run(task)
    message = StepMessage.model_validate(next(e for e in task.Outbox if e.DispatchId == run.DispatchId).Body)
    claimed = changed(task, lambda t: claim(t, message, "w", Timing(now)))
    return changed(claimed, lambda t: finish_attempt(t, run.DispatchId, "w", result, Timing(now + 0.5)))


def webhooks(task):
    return [e for e in task.Outbox if e.Kind == WEBHOOK]


def test_every_status_change_gets_one_entry_per_target_in_the_same_document():
    task = new_task([NotifyTarget(Url="http://hooks.example/a"), NotifyTarget(Events=["succeeded"])])
    assert [(e.Body["Event"], e.Queue) for e in webhooks(task)] == [("created", "http://hooks.example/a")]
    task = step(task, AttemptResult(ResultCode.OK), 101.0)
    task = step(task, AttemptResult(ResultCode.OK), 102.0)
    assert task.TaskStatus is TaskStatus.SUCCESS
    seen = [(e.Body["Event"], e.Queue) for e in webhooks(task)]
    assert seen == [("created", "http://hooks.example/a"), ("started", "http://hooks.example/a"),
                    ("succeeded", "http://hooks.example/a"), ("succeeded", "")]
    last = webhooks(task)[-1].Body
    assert last["OldStatus"] == "RUNNING" and last["NewStatus"] == "SUCCESS" and last["TaskId"] == task.TaskId
    assert len({e.DispatchId for e in task.Outbox}) == len(task.Outbox)  # ids unique: marks are exact


def test_a_failure_and_a_cancel_name_their_events():
    task = new_task([NotifyTarget(Url="http://h/")])
    task = step(task, AttemptResult(ResultCode.FAILED, "boom"), 101.0)
    assert [e.Body["Event"] for e in webhooks(task)] == ["created", "started", "rolling_back"]
    other = new_task([NotifyTarget(Url="http://h/")])
    other = changed(other, lambda t: cancel(t, "ops", "not needed", Timing(101.0)))
    assert [e.Body["Event"] for e in webhooks(other)] == ["created", "cancelled", "rolled_back"]


def test_no_target_no_entry_and_no_status_change_no_event():
    task = new_task([])
    assert not webhooks(task) and task_events(task, task.clone()) == []


def test_a_secret_never_reaches_a_payload():
    task = new_task([NotifyTarget(Url="http://h/")])
    task = step(task, AttemptResult(ResultCode.FAILED, f"could not log in with {SECRET}"), 101.0)
    for entry in webhooks(task):
        assert SECRET not in entry.model_dump_json()
    assert webhooks(task)[0].Body["Parameters"]["password"] == "***"


def test_postpone_moves_the_due_time_and_refuses_when_delivered():
    task = new_task([NotifyTarget(Url="http://h/")])
    entry = webhooks(task)[0]
    later = postpone(task, {entry.DispatchId}, 500.0)
    assert later is not None and webhooks(later)[0].DueAt == 500.0 and entry.DueAt == 100.0
    assert postpone(task, {"gone"}, 500.0) is None


def test_the_global_webhook_is_copied_without_its_url():
    settings = load_settings(webhook_url="http://token@hooks.example/x", webhook_events="succeeded,rolled_back")
    targets = notify_targets((NotifyTarget(Url="http://type.example/"),), settings)
    assert targets == [NotifyTarget(Url="http://type.example/"), NotifyTarget(Url=None, Events=["succeeded", "rolled_back"])]
    assert notify_targets((), load_settings()) == []


# --- flows.yaml `notify` -------------------------------------------------------------------------

FLOWS = """\
version: 1
task_types:
  t:
    notify: %s
    steps:
      - name: a
        normal: {module: m, command: c}
"""


def test_a_task_types_webhook_is_read_from_flows_yaml():
    flow = parse_flows(FLOWS % '{url: "https://hooks.example/baton", events: [succeeded, rolled_back]}', "flows.yaml").get("t")
    assert flow.notify == (NotifyTarget(Url="https://hooks.example/baton", Events=["succeeded", "rolled_back"]),)
    assert parse_flows(FLOWS % "{url: http://h/}", "flows.yaml").get("t").notify[0].Events == []


@pytest.mark.parametrize("notify, where", [
    ("{url: ftp://h/}", "task_types.t.notify.url: must be an http:// or https:// URL"),
    ("{url: http://h/, events: [finished]}", "task_types.t.notify.events[0]: "),
    ("{events: [created]}", "task_types.t.notify.url: "),
    ("{url: http://h/, secret: x}", "task_types.t.notify.secret: "),
])
def test_a_broken_notify_names_file_line_and_path(notify, where):
    with pytest.raises(FlowError) as caught:
        parse_flows(FLOWS % notify, "flows.yaml")
    [problem] = caught.value.problems
    assert problem.startswith("flows.yaml:4: " + where), problem


def test_a_task_put_in_line_for_its_lock_says_waiting_for_lock_once():
    from common.engine.gates.lock.changes import lock_waiting

    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0),
                       ids=counter_ids(), lock=("cluster:eu", 1))
    task.Notify = [NotifyTarget(Url="http://h/")]
    add_notifications(None, task)
    waiting = changed(task, lambda t: lock_waiting(t, "cluster:eu", 1, 101.0))
    assert [e.Body["Event"] for e in webhooks(waiting)] == ["created", "waiting_for_lock"]
    assert isinstance(lock_waiting(waiting, "cluster:eu", 1, 102.0), Refusal)  # once per wait
