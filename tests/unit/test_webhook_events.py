"""Every event a webhook can get is one docs/guide/webhooks.md lists, and the list is complete: derived from
the code (each status a change can move a task to, and the events besides) and compared with the
page's list and flows.yaml's accepted `events`."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from common.flows.schema import NotifyEvent
from common.engine.document import NotifyTarget
from common.engine.core.notifications import EVENTS, STATUS_EVENTS, task_events
from common.engine.operator.actions import cancel, retry
from common.settings import load_settings
from common.engine.states import TASK_TRANSITIONS, TaskStatus
from common.engine.core.entries import Timing
from tests.unit.test_notifications import changed, new_task, webhooks

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "webhooks.md"


def documented_events() -> list[str]:
    section = PAGE.read_text()
    listed = re.search(r"\nEvents: (.*?)\. Each is", section, re.S)
    assert listed, "docs/guide/webhooks.md lists its events"
    return re.findall(r"`([a-z_]+)`", listed.group(1))


def test_every_status_a_change_can_reach_posts_a_documented_event():
    reachable = {after for _, after in TASK_TRANSITIONS} | {TaskStatus.NOT_STARTED}  # a new task
    assert reachable <= set(STATUS_EVENTS), "a status with no webhook event of its own"
    documented = set(documented_events())
    for before, after in sorted(TASK_TRANSITIONS):
        task = new_task([NotifyTarget(Url="http://h/")])
        was, now = task.clone(), task.clone()
        was.TaskStatus, now.TaskStatus = before, after
        assert set(task_events(was, now)) <= documented, (before.name, after.name)


def test_the_docs_flows_yaml_and_settings_accept_exactly_the_events_baton_posts():
    assert sorted(documented_events()) == sorted(EVENTS)
    assert sorted(typing.get_args(NotifyEvent)) == sorted(EVENTS)
    assert load_settings(webhook_events=",".join(EVENTS)).webhook_event_names == list(EVENTS)


def test_retrying_a_rolled_back_task_posts_restarted():
    task = new_task([NotifyTarget(Url="http://h/")])
    task = changed(task, lambda t: cancel(t, "ops", "not needed", Timing(101.0)))
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    task = changed(task, lambda t: retry(t, "ops", "try again", Timing(102.0)))
    assert task.TaskStatus is TaskStatus.NOT_STARTED
    events = [e.Body["Event"] for e in webhooks(task)]
    assert events == ["created", "cancelled", "rolled_back", "restarted"], events
    assert webhooks(task)[-1].Body["OldStatus"] == "ROLLED_BACK" and webhooks(task)[-1].Body["NewStatus"] == "NOT_STARTED"
