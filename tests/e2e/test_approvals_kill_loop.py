"""Approvals under a kill -9 loop of OSS: two OSS processes serve the REST API while one or the
other is killed with SIGKILL and started again, over and over, as three approvers approve six
tasks through whichever answers. A request cut by a kill is sent again (its answer was lost, not
necessarily its write). No approval is lost, none is applied twice: every task ends SUCCESS with
exactly one decision of each approver, and its history one `approval_given` each."""

from __future__ import annotations

import itertools
import signal
import threading
import time

import pytest

from tests.deploy.support import http, wait_task_final
from tests.support.cluster import wait_until
from tests.support.oss_deployment import oss_deployment
from tests.support.ports import free_port
from tests.support.test_store import cluster_mongo_url

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

APPROVERS = ("bob", "carol", "erin")
TOKEN = {name: f"kill-loop-{name}-token-0123456789" for name in ("alice", *APPROVERS)}
TOKENS = ",".join(f"{name}:{token}:operator" for name, token in TOKEN.items())
FLOWS = """
version: 1
defaults: {timeout: 5, retry: 0}
task_types:
  guarded:
    steps:
      - name: prepare
        normal:   {module: resource, command: check_resource}
        rollback: {module: resource, command: restore_resource}
      - name: ask
        approve: {count: 3, not_submitter: true}
      - name: apply
        normal:   {module: resource, command: deduct_resource}
        rollback: {module: resource, command: restore_resource}
"""
TASKS = 6
KILLS = 6


def answered(base: str, method: str, path: str, body: dict | None, who: str) -> tuple[int, dict] | None:
    try:
        status, answer = http(method, f"{base}{path}", body, token=TOKEN[who], timeout=10)
    except OSError:  # refused, reset or cut by the kill: nothing is known of the write
        return None
    return None if status >= 500 else (status, answer)


def test_no_approval_is_lost_or_applied_twice_while_oss_is_killed(rabbitmq_url, tmp_path, request):
    with oss_deployment(tmp_path, rabbitmq_url, FLOWS, {"resource": "tests.support.standin_commands:resource"},
                        mongo_url=cluster_mongo_url(request), extra_env={"BATON_API_TOKENS": TOKENS}) as (cluster, first):
        port = free_port()
        cluster.start_oss(port, name="oss2")
        second = f"http://127.0.0.1:{port}"
        bases = {"oss": first, "oss2": second}
        task_ids = []
        for _ in range(TASKS):
            status, created = http("POST", f"{first}/api/v1/tasks", {"task_type": "guarded", "parameters": {}},
                                   token=TOKEN["alice"])
            assert status == 201, created
            task_ids.append(created["task_id"])
        for task_id in task_ids:
            def parked(task_id: str = task_id) -> bool:
                task = http("GET", f"{first}/api/v1/tasks/{task_id}", token=TOKEN["bob"])[1]
                return any(r["State"] == "parked" for r in task["Runs"]) or task["TaskStatus"] not in (1, 2)

            wait_until(parked, 120, f"task {task_id} waiting for approval\n{cluster.logs()}")

        stop = threading.Event()
        answers: dict[tuple[str, str], list[tuple[int, str]]] = {}
        cut: list[str] = []  # requests a kill cut (or that met a process down): sent again

        def approve(who: str) -> None:
            targets = itertools.cycle(bases.values() if who != "carol" else reversed(list(bases.values())))
            for task_id in task_ids:
                path = f"/api/v1/tasks/{task_id}/steps/ask/actions/approve"
                while (got := answered(next(targets), "POST", path, {"reason": f"{who} agrees"}, who)) is None:
                    cut.append(who)
                    time.sleep(0.2)  # both may be down a moment: try the other, then again
                answers[(who, task_id)] = [(got[0], got[1].get("error", {}).get("message", ""))]
                time.sleep(0.3)

        def killer() -> None:
            for name in itertools.islice(itertools.cycle(bases), KILLS):
                if stop.is_set():
                    return
                cluster.kill(name, signal.SIGKILL)
                time.sleep(0.5)
                cluster.restart(name)

        approvers = [threading.Thread(target=approve, args=(who,)) for who in APPROVERS]
        kills = threading.Thread(target=killer)
        kills.start()
        for thread in approvers:
            thread.start()
        for thread in approvers:
            thread.join(timeout=600)
        stop.set()
        kills.join(timeout=600)

        assert len(answers) == TASKS * len(APPROVERS)
        assert cut, "no request met a killed OSS: the loop tested nothing"
        for (who, task_id), [(status, message)] in answers.items():
            # 200: taken now; 409: an earlier try was taken but its answer was cut (this person
            # decided already, or theirs was the last approval and the step waits no more).
            retried = status == 409 and ("decided already" in message or "waits for no approve" in message)
            assert status == 200 or retried, (who, task_id, status, message)
        for task_id in task_ids:
            final = wait_task_final(first if cluster.procs["oss"].popen.poll() is None else second, task_id,
                                    token=TOKEN["bob"])
            assert final["TaskStatusName"] == "SUCCESS", final["TaskMessage"]
            decisions = [d["Actor"] for d in final["Steps"][1]["Decisions"]]
            assert sorted(decisions) == sorted(APPROVERS), decisions
            given = [e["Actor"] for e in final["History"] if e["Event"] == "approval_given"]
            assert sorted(given) == sorted(APPROVERS), given
