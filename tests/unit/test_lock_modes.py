"""Lock modes: the pure decisions (who may share a key, who is served) and the flows.yaml table's
checks, each refusal naming file, line and path."""

from __future__ import annotations

import pytest

from common.engine.gates.lock.modes import EXCLUSIVE, compatible, fits, shares_of
from common.engine.gates.lock.table import KeyLock, LockHolder, join, leave
from common.errors import FlowError
from common.flows.loader import parse_flows

TABLE = {"backup": {"backup": True, "resize": True, "delete": False},
         "resize": {"backup": True, "resize": False, "delete": False},
         "delete": {"backup": False, "resize": False, "delete": False}}
NOW = 1000.0


def asking(lock: KeyLock, task_id: str, mode: str, seq: float, limit: int = 10) -> tuple[KeyLock, list[str]]:
    return join(lock, task_id, 0, seq, limit, NOW + seq, mode, shares_of(mode, TABLE))


def holders(lock: KeyLock) -> list[tuple[str, str]]:
    return [(h.TaskId, h.Mode) for h in lock.Holders]


def test_compatibility_is_read_from_both_rows() -> None:
    def member(mode: str, shares: list[str]) -> LockHolder:
        return LockHolder(TaskId=mode, Since=0, Mode=mode, Shares=shares)

    backup, resize, delete = (member(m, shares_of(m, TABLE)) for m in ("backup", "resize", "delete"))
    assert compatible(backup, resize) and compatible(resize, backup) and compatible(backup, backup)
    assert not compatible(resize, resize) and not compatible(delete, backup) and not compatible(delete, delete)
    # An edited table: the old backup row shares with resize, the new resize row no more: both must agree.
    assert not compatible(backup, member("resize", ["backup"]).model_copy(update={"Shares": []}))
    exclusive = member(EXCLUSIVE, shares_of(None, TABLE))
    assert compatible(exclusive, exclusive) and not compatible(exclusive, backup)
    assert fits([backup], 2, resize) and not fits([backup, backup], 2, resize) and not fits([resize], 5, resize)


def test_compatible_modes_share_incompatible_wait_and_delete_waits_for_all() -> None:
    lock = KeyLock(Key="instance:db1")
    lock, granted = asking(lock, "b1", "backup", 1)
    lock, granted2 = asking(lock, "r1", "resize", 2)
    lock, granted3 = asking(lock, "b2", "backup", 3)
    assert granted + granted2 + granted3 == ["b1", "r1", "b2"]
    lock, granted = asking(lock, "r2", "resize", 4)  # two resizes may not share
    lock, granted2 = asking(lock, "d1", "delete", 5)
    assert granted == granted2 == [] and [w.TaskId for w in lock.Waiters] == ["r2", "d1"]
    lock, granted = leave(lock, "r1", NOW + 10)
    assert granted == ["r2"]  # the resize slot is free; the delete still waits for the backups
    for task_id in ("b1", "b2"):
        lock, granted = leave(lock, task_id, NOW + 11)
        assert granted == []
    lock, granted = leave(lock, "r2", NOW + 12)
    assert granted == ["d1"] and holders(lock) == [("d1", "delete")]


def test_a_waiting_writer_is_not_overtaken_by_later_readers() -> None:
    lock = KeyLock(Key="k")
    lock, _ = asking(lock, "r1", "resize", 1)
    lock, _ = asking(lock, "d", "delete", 2)
    lock, granted = asking(lock, "b", "backup", 3)  # fits beside the resize, but the delete is ahead
    assert granted == [] and [w.TaskId for w in lock.Waiters] == ["d", "b"]
    lock, granted = leave(lock, "r1", NOW + 5)
    assert granted == ["d"]
    lock, granted = leave(lock, "d", NOW + 6)
    assert granted == ["b"] and holders(lock) == [("b", "backup")]


def test_without_modes_the_lock_is_the_counting_lock_of_before() -> None:
    lock = KeyLock(Key="k")
    for index, task_id in enumerate("abc"):
        lock, granted = join(lock, task_id, 0, index, 2, NOW)
        assert granted == ([task_id] if index < 2 else [])
    assert holders(lock) == [("a", EXCLUSIVE), ("b", EXCLUSIVE)] and lock.Waiters[0].Shares == [EXCLUSIVE]
    assert leave(lock, "a", NOW)[1] == ["c"]
    old = KeyLock.model_validate({"Key": "k", "Holders": [{"TaskId": "a", "Since": 1.0}], "Version": 3})
    assert holders(old) == [("a", EXCLUSIVE)]  # a document written before modes
    # ... and one written now without modes is that document again, field for field.
    assert lock.model_dump(mode="json")["Holders"][0].keys() == {"TaskId", "Since"}
    assert lock.model_dump(mode="json")["Waiters"][0].keys() == {"TaskId", "Priority", "Seq", "Since"}
    from common.engine.document import TaskLock, UnitLock

    assert TaskLock(Key="k").model_dump(mode="json").keys() == {"Key", "Limit", "State", "Since"}
    assert UnitLock(Cursor=0, Key="k").model_dump(mode="json").keys() == {"Cursor", "Item", "Key", "State", "Since"}
    assert TaskLock(Key="k", Mode="r", Shares=[]).model_dump(mode="json")["Shares"] == []


FLOWS = """\
version: 1
lock_modes:
  backup: {backup: true, resize: true}
  resize: {backup: true, resize: false}
task_types:
  t:
    lock: {key: "db:{db}", mode: backup, limit: 4}
    parameters: {db: {type: string}, hosts: {type: array}}
    steps:
      - name: s
        for_each: hosts
        lock: {key: "host:{item}", mode: resize}
        normal: {module: m, command: c}
  plain:
    lock: {key: "db:{db}"}
    steps:
      - name: s
        normal: {module: m, command: c}
"""


def problems(text: str) -> list[str]:
    with pytest.raises(FlowError) as caught:
        parse_flows(text, "flows.yaml")
    return caught.value.problems


def test_a_lock_carries_its_mode_and_its_row() -> None:
    catalog = parse_flows(FLOWS)
    lock = catalog.get("t").lock
    assert (lock.Key, lock.Limit, lock.Mode, lock.Shares) == ("db:{db}", 4, "backup", ["backup", "resize"])
    assert (catalog.get("t").steps[0].Lock.Mode, catalog.get("t").steps[0].Lock.Shares) == ("resize", ["backup"])
    plain = catalog.get("plain").lock
    assert (plain.Mode, plain.Shares) == (None, None) and plain.model_dump() == {"Key": "db:{db}", "Limit": 1}


PLAIN = """\
version: 1
task_types:
  plain:
    lock: {key: "db:{db}"}
    steps:
      - name: s
        lock: {key: "host:{db}", limit: 2}
        normal: {module: m, command: c}
"""


def test_the_content_hash_of_a_file_without_modes_is_unchanged_and_a_row_change_changes_it() -> None:
    # The hash this file had before lock modes existed: tasks in flight keep their version.
    assert parse_flows(PLAIN).get("plain").content_hash == "sha256:596671ad3272f33e"
    moded = PLAIN.replace("version: 1\n", "version: 1\nlock_modes: {r: {r: true}}\n")
    assert parse_flows(moded).get("plain").content_hash == "sha256:596671ad3272f33e"  # a table alone changes nothing
    assert parse_flows(moded.replace('"db:{db}"}', '"db:{db}", mode: r}')).get("plain").content_hash != \
        "sha256:596671ad3272f33e"
    shared = parse_flows(FLOWS).get("t").content_hash
    edited = FLOWS.replace("backup: {backup: true, resize: true}", "backup: {backup: false, resize: true}")
    assert parse_flows(edited).get("t").content_hash != shared


@pytest.mark.parametrize(("edit", "expected"), [
    (("mode: backup, limit: 4", "mode: restore, limit: 4"),
     'flows.yaml:7: task_types.t.lock.mode: unknown mode "restore" (known modes: backup, exclusive, resize; '
     "declare it in lock_modes)"),
    (('key: "host:{item}", mode: resize', 'key: "host:{item}", mode: nope'),
     'flows.yaml:12: task_types.t.steps[0].lock.mode: unknown mode "nope"'),
    (("resize: {backup: true, resize: false}", "resize: {resize: false}"),
     "flows.yaml:4: lock_modes.resize: says nothing about backup: give each declared mode true"),
    (("resize: {backup: true, resize: false}", "resize: {backup: false, resize: false}"),
     "flows.yaml:4: lock_modes.resize.backup: is false but lock_modes.backup.resize is true: whether two modes "
     "share a key reads the same both ways"),
    (("resize: {backup: true, resize: false}", "resize: {backup: true, resize: false, delete: true}"),
     'flows.yaml:4: lock_modes.resize.delete: unknown mode "delete" (declared modes: backup, resize)'),
    (("lock_modes:\n", "lock_modes:\n  exclusive: {exclusive: false}\n"),
     "flows.yaml:3: lock_modes.exclusive: exclusive is built in"),
    (("resize: {backup: true, resize: false}", "resize: {backup: true, resize: false, exclusive: true}"),
     "flows.yaml:4: lock_modes.resize.exclusive: exclusive shares a key with no declared mode"),
    (("resize: {backup: true, resize: false}", "resize: {backup: 'true', resize: false}"),
     "flows.yaml:4: lock_modes.resize.backup:"),
])
def test_a_broken_table_or_mode_is_refused_with_file_line_and_path(edit: tuple[str, str], expected: str) -> None:
    text = FLOWS.replace(*edit)
    assert text != FLOWS
    found = problems(text)
    assert any(p.startswith(expected) for p in found), found


def test_an_asymmetric_pair_is_reported_once() -> None:
    found = problems(FLOWS.replace("resize: {backup: true, resize: false}", "resize: {backup: false, resize: false}"))
    assert len([p for p in found if "reads the same both ways" in p]) == 1


def test_the_mode_travels_from_the_template_to_the_task_the_step_and_the_child() -> None:
    from common.engine.document import ChildTemplate, LockTemplate
    from common.engine.gates.lock.changes import lock_granted
    from common.engine.kinds.sub_flow.changes import start_child
    from common.engine.operator.actions import cancel, retry
    from common.engine.core.entries import Timing, create_task
    from tests.support.builders import counter_ids, make_step

    ids = counter_ids("m")
    step = make_step("s")
    step.Lock = LockTemplate(Key="host:{h}", Limit=3, Mode="backup", Shares=["backup", "resize"])
    task = create_task(task_type="t", steps=[step], parameters={"h": "a"}, timing=Timing(1.0), ids=ids)
    (entry,) = task.Outbox
    assert (entry.Body["Mode"], entry.Body["Shares"], task.UnitLocks[0].Mode) == ("backup", ["backup", "resize"], "backup")
    assert "waiting for lock host:a (mode backup, limit 3)" in [e.Message for e in task.History]

    plain = create_task(task_type="t", steps=[make_step("s")], parameters={}, timing=Timing(1.0), ids=ids, lock=("k", 2))
    assert "Mode" not in plain.Outbox[0].Body and plain.Lock.Mode == "exclusive"  # the entry of before modes

    moded = create_task(task_type="t", steps=[make_step("s")], parameters={}, timing=Timing(1.0), ids=ids,
                        lock=("k", 2, "resize", ("backup",)))
    assert (moded.Lock.Mode, moded.Lock.Shares) == ("resize", ["backup"])
    ended = cancel(moded, "olga", "no", Timing(2.0))
    again = retry(ended, "olga", "again", Timing(3.0), ids)
    acquire = [e for e in again.Outbox if e.Kind == "lock_acquire"][-1]
    assert (again.Lock.Mode, acquire.Body["Mode"], acquire.Body["Shares"]) == ("resize", "resize", ["backup"])

    sub = make_step("sub")
    sub.NormalModule = sub.NormalCommand = sub.RollbackModule = sub.RollbackCommand = None
    sub.Flow, sub.FlowInputs = "child", {"name": "db"}
    sub.FlowTemplate = ChildTemplate(TaskType="child", Steps=[make_step("c")],
                                     Lock=LockTemplate(Key="db:{name}", Limit=2, Mode="delete", Shares=[]))
    parent = create_task(task_type="p", steps=[sub], parameters={"db": "x"}, timing=Timing(1.0), ids=ids,
                         task_id="P", lock=("p", 1))
    parent = lock_granted(parent, "p", Timing(2.0), ids)
    (start,) = [e for e in parent.Outbox if e.Kind == "start_child"]
    child = start_child(start.Body, Timing(3.0), ids)
    assert (child.Lock.Key, child.Lock.Mode, child.Lock.Shares) == ("db:x", "delete", [])
