"""The resource module's verifies (docs/design/runtime.md, "Verifying an unknown outcome") as its
command process runs them, on a real SQLite inventory: a deduct whose outcome is unknown is found
done or not done from the task's claim, and a restore after a deduct that never happened gives
nothing back."""

from __future__ import annotations

import time
from typing import Any

from common.engine.states import Phase
from common.runtime.child import execute
from common.runtime.verify import VerifyPlan
from modules.resource.inventory.factory import open_inventory
from modules.resource.inventory.port import Capacity, ClaimState
from modules.resource.commands import ResourceParts, registry
from modules.resource.requests import claim_key, holder_from, need_from

PARAMS = {"name": "app_1", "cpu": 1, "memory_mb": 256, "storage_gb": 1}
TASK = "task-1"


def parts_with_reservation(tmp_path: Any) -> ResourceParts:
    inventory = open_inventory(f"sqlite:///{tmp_path / 'inventory.db'}")
    inventory.add_host("db-1", Capacity(8, 8192, 100), 0.0)
    now = time.time()
    inventory.reserve(claim_key(TASK), need_from(PARAMS), holder_from(PARAMS), now, now + 600)
    return ResourceParts(inventory, 600.0)


def run(parts: ResourceParts, command: str, phase: Phase, attempt: int, before: str, verify: str) -> dict:
    plan = VerifyPlan(before, verify, f"{TASK}:2:normal", final=False, again=1.0, count=0, limit=3)
    request = {"task_id": TASK, "task_type": "t", "command": command, "cursor": 2, "phase": int(phase),
               "attempt": attempt, "idempotency_key": f"{TASK}:2:{phase.label}", "run_key": TASK,
               "parameters": PARAMS, "verify": plan}
    return execute(registry, request, False, parts)


def state(parts: ResourceParts) -> ClaimState:
    claim = parts.inventory.get_claim(claim_key(TASK), time.time())
    assert claim is not None
    return claim.state


def test_a_deduct_not_made_is_verified_not_done_and_made_by_the_retry(tmp_path):
    parts = parts_with_reservation(tmp_path)
    answer = run(parts, "deduct_resource", Phase.NORMAL, 2, "retry", "deduct_resource")
    assert answer["ok"] and answer["verified"] == "not_done" and "state: reserved" in answer["verify_reason"]
    assert state(parts) is ClaimState.DEDUCTED and answer["output"]["reservation"]["state"] == "deducted"


def test_a_deduct_made_is_verified_done_with_its_output(tmp_path):
    parts = parts_with_reservation(tmp_path)
    parts.inventory.deduct(claim_key(TASK), time.time())  # the attempt whose answer was lost
    answer = run(parts, "deduct_resource", Phase.NORMAL, 2, "retry", "deduct_resource")
    assert answer["ok"] and answer["verified"] == "done" and answer["message"].startswith("verified done")
    assert answer["output"]["reservation"]["state"] == "deducted" and answer["output"]["reservation"]["host"] == "db-1"


def test_the_restore_of_a_deduct_that_never_happened_gives_nothing_back(tmp_path):
    parts = parts_with_reservation(tmp_path)
    answer = run(parts, "restore_resource", Phase.ROLLBACK, 1, "rollback", "deduct_resource")
    assert answer["ok"] and answer["verified"] == "not_done" and "nothing to roll back" in answer["message"]
    assert state(parts) is ClaimState.RESERVED  # the check step's own rollback gives it back
    parts.inventory.deduct(claim_key(TASK), time.time())
    undone = run(parts, "restore_resource", Phase.ROLLBACK, 1, "rollback", "deduct_resource")
    assert undone["ok"] and undone["verified"] == "done" and state(parts) is ClaimState.RESTORED


def test_a_check_without_a_claim_is_not_done_and_one_with_it_done(tmp_path):
    parts = parts_with_reservation(tmp_path)
    found = run(parts, "restore_resource", Phase.ROLLBACK, 1, "rollback", "check_resource")
    assert found["verified"] == "done" and state(parts) is ClaimState.RESTORED  # the rollback ran
    empty = ResourceParts(open_inventory(f"sqlite:///{tmp_path / 'empty.db'}"), 600.0)
    assert run(empty, "restore_resource", Phase.ROLLBACK, 1, "rollback", "check_resource")["verified"] == "not_done"
