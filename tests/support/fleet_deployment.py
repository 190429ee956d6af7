"""The deployment the docs/fan-out.md examples run on: an OSS deployment of real processes
(tests/support/oss_deployment.py) whose `fleet` module serves tests/support/patch_commands.py,
with item records on and every command's side effect noted in a ledger; and the few REST calls
those tests make of it (submit with injected faults, wait for the end, count the effects, two
operators acting at once through two OSS)."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from common.engine.kinds.for_each import records as fan_out
from common.engine.states import FINAL_STATUSES
from tests.deploy.support import http
from tests.support.cluster import Cluster, wait_until
from tests.support.ledger_file import read_ledger
from tests.support.oss_deployment import answers, oss_deployment
from tests.support.ports import free_port
from tests.support.races import race_threads

REGISTRY = "tests.support.patch_commands:fleet"


@contextlib.contextmanager
def fleet_deployment(workdir: Path, rabbitmq_url: str, flows: str) -> Iterator[tuple[Cluster, str]]:
    """The cluster (its ledger at `cluster.ledger`) and OSS's base URL. Item records are on in
    the processes and in this one too, which reads and changes them through the service's code."""
    kept, fan_out.RECORDS_ENABLED = fan_out.RECORDS_ENABLED, True
    ledger = workdir / "ledger.jsonl"
    env = {"BATON_TEST_LEDGER": str(ledger), "BATON_ITEM_RECORDS": "true"}
    try:
        with oss_deployment(workdir, rabbitmq_url, flows, {"fleet": REGISTRY}, extra_env=env) as (cluster, base):
            cluster.ledger = ledger
            yield cluster, base
    finally:
        fan_out.RECORDS_ENABLED = kept


def patch_faults(failing: Iterable[int], times: int | None = None) -> list[dict]:
    """Faults that fail `patch` for good on each item of `failing` (its first `times` attempts only)."""
    return [{"command": "patch", "item": item, "action": "fail", "retryable": False,
             **({"times": times} if times else {})} for item in failing]  # fmt: skip


def submit(base: str, task_type: str, parameters: dict) -> str:
    status, created = http("POST", f"{base}/api/v1/tasks", {"task_type": task_type, "parameters": parameters})
    assert status == 201, created
    return created["task_id"]


def final(cluster: Cluster, base: str, task_id: str, seconds: float = 300) -> dict:
    """The task as REST shows it once it ended and its outbox is empty (each message it wrote sent)."""

    def ended() -> bool:
        task = cluster.store.get(task_id)
        return task.TaskStatus in FINAL_STATUSES and not task.Outbox

    wait_until(ended, seconds, f"task {task_id} final")
    status, task = http("GET", f"{base}/api/v1/tasks/{task_id}")
    assert status == 200, task
    return task


def effects(cluster: Cluster, task_id: str, op: str) -> Counter:
    """How many times each item of the task ran `op`, from the ledger."""
    return Counter(n["item"] for n in read_ledger(cluster.ledger) if n["task"] == task_id and n["op"] == op)


def second_oss(cluster: Cluster) -> str:
    """The base URL of a second OSS process on the same store and broker, once it answers."""
    port = free_port()
    cluster.start_oss(port, name="oss2")
    other = f"http://127.0.0.1:{port}"
    wait_until(lambda: answers(other), 60, "the second OSS ready")
    return other


def posted_at_once(bases: list[str], path: str, reasons: list[str]) -> list[int]:
    """One POST of `path` to each OSS, released together, each with its reason; their statuses, sorted."""
    return sorted(race_threads(len(bases), lambda i: http("POST", f"{bases[i]}{path}", {"reason": reasons[i]})[0]))
