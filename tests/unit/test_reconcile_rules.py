"""The reconciler's decisions (oss/reconcile_rules.py): records + task states -> actions, pure."""

from common.engine.states import TaskStatus
from oss.reconcile_rules import InstanceRecord, ReservationRecord, TaskFacts, plan, run_of_owner_key, task_of_claim

S, R, F, RUN = TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK, TaskStatus.ROLLBACK_FAILED, TaskStatus.RUNNING


def row(name, task, generation=""):
    return InstanceRecord(name, task, f"{task}{generation}:2:normal", "ready")


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
    result = plan([row("app_1", "t1"), row("app_3", "someone_else")], [], {"t1": successes[0]}, successes, ["app_2"])
    missing = [(f.kind, f.target, f.task_id) for f in result.findings if f.kind == "instance_missing"]
    assert missing == [("instance_missing", "app_3", "t3")]
    assert result.actions == []


def test_claim_keys_and_owner_keys_name_their_task_and_run():
    assert task_of_claim("task:abc") == "abc" and task_of_claim("task:abc:g2") == "abc"
    assert task_of_claim("other:abc") is None and task_of_claim("task:abc:gx") is None
    assert run_of_owner_key("abc:g1:2:normal") == "abc:g1" and run_of_owner_key("abc:2:normal") == "abc"
