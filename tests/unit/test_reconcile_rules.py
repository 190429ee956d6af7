"""The reconciler's decisions (modules/mysql/reconcile_rules.py): records + task states -> actions, pure."""

from common.engine.states import TaskStatus
from modules.mysql.reconcile_rules import (
    InstanceRecord,
    ReservationRecord,
    ServerView,
    TaskFacts,
    plan,
    run_of_owner_key,
    task_of_claim,
)

S, R, F, RUN = TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK, TaskStatus.ROLLBACK_FAILED, TaskStatus.RUNNING


OURS, HAND_MADE = "created by baton", "not created by baton"


def row(name, task, generation="", database=OURS, user=OURS):
    described = {"database": database, "user": user}
    return InstanceRecord(name, task, f"{task}{generation}:2:normal", "ready", database, user,
                          present=frozenset(p for p, d in described.items() if d != "absent"),
                          proven=frozenset(p for p, d in described.items() if d == OURS))  # fmt: skip


def server_with(*names, users=None):
    users = names if users is None else users
    return ServerView(frozenset(names), frozenset((u, "%") for u in users), "%")


def claim(task, suffix=""):
    return ReservationRecord(f"task:{task}{suffix}", "app", "db-1", "reserved")


def test_only_records_of_rolled_back_tasks_are_acted_on():
    owners = {t: TaskFacts(t, s) for t, s in [("ok", S), ("rb", R), ("rf", F), ("run", RUN)]}
    result = plan([row("a", "ok"), row("b", "rb"), row("c", "rf"), row("d", "run"), row("e", "nobody")],
                  [claim("ok"), claim("rb", ":g1"), claim("rf"), claim("run")], owners, [])  # fmt: skip
    assert [(a.kind, a.target, a.task_id) for a in result.actions] == [
        ("remove_instance", "b", "rb"), ("restore_reservation", "task:rb:g1", "rb"),
    ]
    assert result.actions[0].guard == "rb:2:normal"  # acted on only while the row is still this run's
    assert sorted((f.kind, f.target) for f in result.findings) == [
        ("owner_rollback_failed", "c"), ("owner_rollback_failed", "task:rf"), ("owner_unknown", "e"),
    ]


def test_a_successful_task_without_its_instance_is_reported_unless_a_delete_dropped_it():
    successes = [TaskFacts("t1", S, "app_1"), TaskFacts("t2", S, "app_2"), TaskFacts("t3", S, "app_3")]
    result = plan([row("app_1", "t1"), row("app_3", "someone_else")], [], {"t1": successes[0]}, successes, ["app_2"],
                  server_with("app_1", "app_3"))  # fmt: skip
    missing = [(f.kind, f.target, f.task_id) for f in result.findings if f.kind == "instance_missing"]
    assert missing == [("instance_missing", "app_3", "t3")]
    assert result.actions == []


def test_the_server_not_the_record_decides_whether_a_successful_tasks_instance_is_missing():
    """The record stays when someone drops the database (or the user) by hand: still reported."""
    successes = [TaskFacts("t1", S, "app_1"), TaskFacts("t2", S, "app_2"), TaskFacts("t3", S, "app_3")]
    rows = [row("app_1", "t1"), row("app_2", "t2"), row("app_3", "t3")]
    owners = {t.task_id: t for t in successes}
    result = plan(rows, [], owners, successes, server=server_with("app_1", "app_3", users=["app_1", "app_2"]))
    found = {f.target: f.why for f in result.findings}
    assert set(found) == {"app_2", "app_3"}
    assert "database app_2 does not exist" in found["app_2"] and "user" not in found["app_2"]
    assert "user app_3 does not exist" in found["app_3"] and "database" not in found["app_3"]


def test_nothing_is_reported_of_successful_tasks_when_the_server_could_not_be_read_nor_while_a_task_works_on_it():
    successes = [TaskFacts("t1", S, "app_1"), TaskFacts("t2", S, "app_2")]
    assert plan([], [], {}, successes, server=None).findings == []
    result = plan([], [], {}, successes, server=server_with(), in_flight=["app_1"])
    assert [f.target for f in result.findings] == ["app_2"]


def test_a_record_of_a_rolled_back_task_says_what_stands_on_the_server_and_reports_what_baton_did_not_create():
    owners = {"rb": TaskFacts("rb", R), "rb2": TaskFacts("rb2", R)}
    result = plan([row("x", "rb", database=HAND_MADE, user="absent"), row("y", "rb2", database="absent", user="absent")],
                  [], owners, [], server=server_with("x"))  # fmt: skip
    whys = {a.target: a.why for a in result.actions}
    assert "database x not created by baton, user x absent" in whys["x"] and "nothing of baton's" in whys["x"]
    assert "database y absent, user y absent" in whys["y"]
    assert [(f.kind, f.target) for f in result.findings] == [("not_created_by_baton", "x")]


def test_claim_keys_and_owner_keys_name_their_task_and_run():
    assert task_of_claim("task:abc") == "abc" and task_of_claim("task:abc:g2") == "abc"
    assert task_of_claim("other:abc") is None and task_of_claim("task:abc:gx") is None
    assert run_of_owner_key("abc:g1:2:normal") == "abc:g1" and run_of_owner_key("abc:2:normal") == "abc"
