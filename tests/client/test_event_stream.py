"""Reading a task's event stream across reconnects (baton_client/events.py): lines in, events
out. The lines are the server's own format (oss/api/routers/events.py's `sse`)."""

from __future__ import annotations

import json

import pytest

from baton_client import Change, Conflict, Ended, Progress, TaskShown
from baton_client.events import EventFollower, SseParser, reconnect_pause, stream_seconds

TASK = {"TaskId": "t1", "TaskType": "provision", "TaskStatus": 2, "TimeCreate": 1.0, "Steps": [{"Name": "a"}]}


def change(event: str, time: float) -> list[str]:
    return ["event: change", f"data: {json.dumps({'Time': time, 'Event': event})}", ""]


def task(event_id: str, status: int = 2) -> list[str]:
    return [f"id: {event_id}", "event: task", f"data: {json.dumps({**TASK, 'TaskStatus': status})}", ""]


def fed(follower: EventFollower, lines: list[str]) -> list:
    return [event for line in lines for event in follower.feed(line)]


def test_the_parser_follows_the_standard_comments_multiline_data_and_the_space_after_the_colon() -> None:
    parser = SseParser()
    lines = [": still here", "event: x", "data:first", "data:  second", "id: 7", ""]
    assert [parser.feed(line) for line in lines][-1] == ("x", "7", "first\n second")
    assert parser.feed("") is None  # a blank line alone completes nothing


def test_changes_are_handed_over_with_the_task_that_closes_their_batch() -> None:
    follower = EventFollower()
    assert fed(follower, change("claimed", 1) + change("step_succeeded", 2)) == []
    events = fed(follower, task("3.2"))
    assert [type(e) for e in events] == [Change, Change, TaskShown]
    assert [e.event.Event for e in events[:2]] == ["claimed", "step_succeeded"]
    assert events[2].event_id == follower.last_event_id == "3.2"


def test_a_connection_lost_mid_batch_drops_the_batch_and_the_resumed_stream_gives_each_change_once() -> None:
    follower = EventFollower()
    fed(follower, change("created", 0) + task("1.1"))
    assert fed(follower, change("claimed", 1)) == []  # then the connection drops
    follower.reconnecting()
    assert follower.headers()["Last-Event-ID"] == "1.1"
    # The server sends everything after 1.1 again: the claim once, not twice.
    events = fed(follower, change("claimed", 1) + change("step_succeeded", 2) + task("3.3"))
    assert [e.event.Event for e in events if isinstance(e, Change)] == ["claimed", "step_succeeded"]


def test_progress_is_handed_over_at_once_and_end_ends_the_stream() -> None:
    follower = EventFollower("2.4")
    progress = ["event: progress", 'data: {"Step": 0, "Name": "per_node", "ItemCount": 9, "ItemCounts": {"running": 9}}', ""]
    assert fed(follower, progress) == [Progress(0, "per_node", 9, {"running": 9})]
    assert fed(follower, task("5.9", status=0) + ["event: end", 'data: {"TaskStatus": 0}', ""])[-1] == Ended(0)
    assert follower.ended


def test_a_stream_ended_because_the_task_can_no_longer_be_read_raises_conflict() -> None:
    follower = EventFollower()
    with pytest.raises(Conflict) as ended:
        fed(follower, ["event: end", 'data: {"error": "unreadable_task", "reason": "Steps: field required"}', ""])
    assert ended.value.code == "unreadable_task" and "Steps: field required" in str(ended.value)


def test_a_server_timeout_ends_the_connection_not_the_reading() -> None:
    follower = EventFollower()
    assert fed(follower, ["event: timeout", 'data: {"seconds": 30}', ""]) == [] and not follower.ended


@pytest.mark.parametrize(("remaining", "asked"), [(None, 3600.0), (12.34, 12.3), (0.01, 0.1), (90000, 3600.0)])
def test_each_connection_asks_the_server_for_what_is_left_of_the_callers_timeout(remaining, asked) -> None:
    assert stream_seconds(remaining) == asked


def test_a_reconnection_waits_no_longer_than_the_callers_deadline() -> None:
    assert reconnect_pause(8.0, deadline=None, now=100.0) == 8.0
    assert reconnect_pause(8.0, deadline=103.0, now=100.0) == 3.0
    assert reconnect_pause(8.0, deadline=99.0, now=100.0) == 0.0
