"""check_resource run late (its replica froze past the lease) never leaves capacity held for a
task whose rollback has begun: the command as its process runs it, on a real SQLite store and
inventory."""

from __future__ import annotations

from typing import Any

from common.runtime.child import execute
from common.engine.states import Phase
from modules.resource.inventory.factory import open_inventory
from modules.resource.inventory.port import Capacity
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import AttemptResult, Refusal, Timing, claim, finish_attempt
from common.engine.states import ResultCode
from modules.resource.commands import ResourceParts, registry
from tests.support.builders import counter_ids, make_step, only_run
from tests.unit.test_transitions import message_for
from common.engine.core.entries import create_task

PARAMS = {"name": "app_1", "cpu": 1, "memory_mb": 256, "storage_gb": 1}


def setup(tmp_path: Any) -> tuple[SqliteStore, ResourceParts, Any]:
    url = f"sqlite:///{tmp_path / 'baton.db'}"
    store = SqliteStore(tmp_path / "baton.db")
    inventory = open_inventory(url)
    inventory.add_host("db-1", Capacity(8, 8192, 100), 0.0)
    steps = [make_step("check", "resource", retry=0), make_step("init", "mysql")]
    task = create_task(task_type="t", steps=steps, parameters=PARAMS, timing=Timing(100.0), ids=counter_ids())
    store.insert(task)
    return store, ResourceParts(inventory, 600.0), task


def claim_step(store: SqliteStore, task_id: str, owner: str) -> Any:
    task = store.get(task_id)
    result = mutate(store, task_id, lambda t: claim(t, message_for(t), owner, Timing(101.0, lease=30)))
    assert not isinstance(result, Refusal)
    return only_run(task), result


def request(task: Any, run: Any, owner: str) -> dict:
    return {
        "task_id": task.TaskId, "task_type": "t", "command": "check_resource", "cursor": run.Cursor,
        "phase": int(Phase.NORMAL), "attempt": run.Attempt, "idempotency_key": "k", "run_key": task.TaskId,
        "parameters": PARAMS, "dispatch_id": run.DispatchId, "owner": owner,
    }  # fmt: skip


def test_a_late_check_with_a_stale_token_reserves_nothing(tmp_path: Any) -> None:
    store, parts, task = setup(tmp_path)
    run, _ = claim_step(store, task.TaskId, "resource@a")
    answer = execute(registry, request(task, run, "resource@b"), False, parts, store.get)  # not the owner
    assert not answer["ok"] and "stale" in answer["message"]
    assert parts.inventory.list_claims(200.0, live_only=True) == []
    store.close()


def test_a_check_that_reserved_after_its_rollback_gives_the_reservation_back(tmp_path: Any) -> None:
    """The rollback (restore_resource) ran while no attempt had reserved yet: it found nothing.
    The frozen attempt then reserves: it sees the rollback began, and restores the claim itself."""
    store, parts, task = setup(tmp_path)
    run, claimed = claim_step(store, task.TaskId, "resource@a")
    failed = AttemptResult(ResultCode.FAILED, "lease lapsed", retryable=False)
    mutate(store, task.TaskId, lambda t: finish_attempt(t, run.DispatchId, "resource@a", failed, Timing(102.0)))
    rollback, _ = claim_step(store, task.TaskId, "resource@b")  # the rollback of the check step
    assert rollback.Phase is Phase.ROLLBACK
    assert parts.inventory.restore(task.TaskId, 103.0) is None  # nothing to give back yet

    # The frozen attempt checked its fence before all this (it read the document as it was then),
    # froze, and reserves now; every later read sees the store as it is.
    reads = iter([claimed])
    answer = execute(registry, request(task, run, "resource@a"), False, parts,
                     lambda task_id: next(reads, None) or store.get(task_id))  # fmt: skip
    assert not answer["ok"] and "given back" in answer["message"]
    assert parts.inventory.list_claims(200.0, live_only=True) == []
    store.close()


def test_a_thawed_check_finding_the_claim_deducted_says_it_reserved_nothing(tmp_path: Any) -> None:
    """Its replica froze after the fence check; the step was handed on, reserved, and the task's
    deduct_resource charged it. The thawed attempt answers the claim as it stands, and its log
    says what it did: nothing (a "capacity reserved" line there was false)."""
    import structlog

    from modules.resource.requests import claim_key, holder_from, need_from

    store, parts, task = setup(tmp_path)
    run, claimed = claim_step(store, task.TaskId, "resource@a")
    key = claim_key(task.TaskId)
    parts.inventory.reserve(key, need_from(PARAMS), holder_from(PARAMS), 104.0, 704.0)  # the other replica
    parts.inventory.deduct(key, 105.0)
    reads = iter([claimed])
    with structlog.testing.capture_logs() as logs:
        answer = execute(registry, request(task, run, "resource@a"), False, parts,
                         lambda task_id: next(reads, None) or store.get(task_id))  # fmt: skip
    assert answer["ok"] and answer["output"]["reservation"]["state"] == "deducted"
    events = [e["event"] for e in logs]
    assert "capacity reserved" not in events
    assert "capacity deducted already by a later step; nothing reserved" in events
    store.close()
