"""The stored kinds (common/engine/codes.py) and the flushers' table (common/engine/outbox.py): a
stored document with an entry of every outbox kind, both wait kinds and every alarm kind reads,
each body parses as its kind's model, and every kind has exactly one flusher with a handler."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from common.engine.codes import AlarmKind, OutboxKind, WaitKind
from common.engine.document import Alarm, OutboxEntry, Task
from common.engine.outbox import FLUSHERS, Flusher, body_of, kinds_of
from common.engine.core.entries import Timing, create_task
from common.relay.child_relay import ChildRelay
from common.store.gates.lock.relay import LockRelay
from tests.support.builders import counter_ids, make_step

# As stored documents hold them (the strings are the document format: they never change).
STORED_BODIES: dict[str, dict] = {
    "publish": {"TaskId": "t", "Cursor": 0, "Item": None, "Type": 0, "Module": "m", "Command": "c",
                "Timeout": 60.0, "Retry": 0, "DispatchId": "d1", "Attempt": 1},
    "webhook": {"EventId": "t:3:started", "Event": "started", "Time": 1.0, "TaskId": "t", "TaskType": "x",
                "OldStatus": "NOT_STARTED", "NewStatus": "RUNNING", "TaskStatus": 2, "TaskMessage": "",
                "Parameters": {}, "UserId": None, "Labels": {}, "Parent": None},
    "start_child": {"TaskId": "t.1", "ParentTaskId": "t", "DispatchId": "d2", "TaskType": "child",
                    "Steps": [], "Parameters": {}, "SecretParameters": [], "Parent": {"TaskId": "t", "Cursor": 1},
                    "Priority": 0, "UserId": None, "Labels": {}, "Notify": []},
    "undo_child": {"TaskId": "t.1", "ParentTaskId": "t", "DispatchId": "d3"},
    "cancel_child": {"TaskId": "t.1", "ParentTaskId": "t", "Actor": "olga", "Reason": "not needed"},
    "pause_child": {"TaskId": "t.1", "ParentTaskId": "t", "Actor": "olga", "Reason": "patching"},
    "resume_child": {"TaskId": "t.1", "ParentTaskId": "t", "Actor": "olga", "Reason": "patched"},
    "child_finished": {"TaskId": "t", "Cursor": 1, "Item": None, "ChildTaskId": "t.1", "Status": 0,
                       "Message": "", "Output": {"ip": "10.0.0.1"}},
    "task_finished": {"TaskId": "w", "AwaitedTaskId": "t", "Status": 0},
    "lock_acquire": {"Key": "db:1", "Limit": 1, "TaskId": "t", "Priority": 0, "Seq": 1.5},
    "lock_release": {"Key": "db:1", "TaskId": "t", "Member": "t#1", "Generation": 0},
    "rate_take": {"Key": "host:db1", "Limit": 10, "Per": 60.0, "TaskId": "t", "Generation": 0},
    "open_items": {"Cursor": 2, "Generation": 0, "Values": ["a", "b"]},
    "cancel_items": {"Cursor": 2, "Generation": 0, "Stop": {"Actor": "olga", "Reason": "wrong fleet"}},
    "rollback_items": {"Cursor": 2, "Generation": 0},
    "resume_items": {"Cursor": 2, "Generation": 0},
    "reopen_item_rollbacks": {"Cursor": 2, "Generation": 0, "Action": "retry-rollback", "Actor": "olga",
                              "Reason": "the host is back"},
    "redrive_items": {"Cursor": 2, "Generation": 0, "Actor": "olga", "Reason": "the mirror is back"},
    "wave_gate": {"Cursor": 2, "Generation": 0, "Wave": 0, "Phase": "baking"},
}


def stored_task() -> dict:
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0), ids=counter_ids("k"))
    doc = json.loads(task.to_json())
    doc["Outbox"] = [{"DispatchId": f"e{n}", "Kind": kind, "Queue": "", "Body": body, "Priority": 0, "DueAt": 100.0}
                     for n, (kind, body) in enumerate(STORED_BODIES.items())]
    doc["WaitingFor"] = {"Kind": "task", "Since": 100.0, "TaskId": "other", "RecheckAt": 400.0}
    return doc


def test_every_outbox_kind_has_a_stored_example_and_one_flusher():
    assert set(STORED_BODIES) == {k.value for k in OutboxKind} == {k.value for k in FLUSHERS}


def test_a_stored_document_with_every_kind_reads_and_writes_back_the_same_strings():
    doc = stored_task()
    task = Task.from_json(json.dumps(doc))
    assert [e.Kind for e in task.Outbox] == [OutboxKind(k) for k in STORED_BODIES]
    assert task.WaitingFor is not None and task.WaitingFor.Kind is WaitKind.TASK
    for entry in task.Outbox:
        typed = body_of(entry.Kind, entry.Body)  # raises if a stored body does not fit its kind
        assert type(typed) is FLUSHERS[entry.Kind][0]
    again = json.loads(task.to_json())
    assert [e["Kind"] for e in again["Outbox"]] == list(STORED_BODIES)
    assert [e["Body"] for e in again["Outbox"]] == list(STORED_BODIES.values())
    assert again["WaitingFor"]["Kind"] == "task"
    doc["WaitingFor"] = {"Kind": "lock", "Since": 100.0, "Key": "db:1"}
    assert Task.from_doc(doc).WaitingFor.Kind is WaitKind.LOCK


def test_an_unknown_kind_or_a_body_of_the_wrong_shape_is_refused():
    doc = stored_task()
    doc["Outbox"][0]["Kind"] = "teleport"
    with pytest.raises(ValidationError):
        Task.from_doc(doc)
    with pytest.raises(ValidationError):
        body_of(OutboxKind.LOCK_RELEASE, {"Key": "k"})  # no TaskId
    with pytest.raises(ValidationError):
        body_of(OutboxKind.TASK_FINISHED, {"TaskId": "w", "AwaitedTaskId": "t", "Status": 0, "Extra": 1})


@pytest.mark.parametrize("kind", [k.value for k in AlarmKind])
def test_every_stored_alarm_kind_reads(kind):
    alarm = Alarm.model_validate({"AlarmId": "a", "Kind": kind, "Time": 1.0, "Message": "m"})
    assert alarm.Kind is AlarmKind(kind) and alarm.model_dump(mode="json")["Kind"] == kind


def test_each_relay_handles_exactly_the_kinds_the_table_gives_it():
    timing = lambda: Timing(100.0)  # noqa: E731
    assert set(ChildRelay(None, timing, lambda t: None).handlers()) == kinds_of(Flusher.CHILDREN)
    assert set(LockRelay(None, timing, lambda t: None).handlers()) == kinds_of(Flusher.LOCKS)
    assert kinds_of(Flusher.BROKER) == {OutboxKind.PUBLISH} and kinds_of(Flusher.WEBHOOK) == {OutboxKind.WEBHOOK}


def test_entries_parse_from_strings_and_compare_with_them():
    entry = OutboxEntry(DispatchId="d", Kind="lock_acquire", Body={}, DueAt=0.0)
    assert entry.Kind is OutboxKind.LOCK_ACQUIRE and entry.Kind == "lock_acquire"
