"""docs/fan-out.md, "A failure budget", run for real: its flows.yaml on a real module process
(tests/support/patch_commands.py counts side effects in a ledger), a sweeper and OSS in processes
of their own, the real RabbitMQ, the task submitted over REST and read over REST and through the
`baton` CLI as its own process.

- Within the budget: each failed host's own rollback ran once, no other host was undone, the
  step after ran; the task succeeded with failed items, as the task view, the list and its
  filter, `baton get`, `baton get --items` and `baton list --failed-items` say.
- Past the budget: the task rolls back; every host that was patched, and each failed one, is
  undone exactly once (the one rolled back within the budget is not undone again).
- A tolerated host whose own rollback outlasts the other hosts (its first attempt hangs into its
  timeout): the step waits for it, and the task succeeds with that host counted failed.

docs/fan-out.md, "Hold and redrive", likewise: past the budget the task holds (nothing undone,
nothing new started); two OSS processes asked to redrive it at once, exactly one does (the other
answers 409) and the task ends succeeded, every host patched exactly once across the first run
and the redrive; `baton rollback` of another held task rolls back each patched host once.
"""

from __future__ import annotations

import textwrap
from collections import Counter

import pytest

from common.engine.states import TaskStatus
from tests.deploy.support import http
from tests.support.cluster import wait_until
from tests.support.doc_examples import blocks
from tests.support.fleet_deployment import effects, final, fleet_deployment, patch_faults, posted_at_once, second_oss
from tests.support.fleet_deployment import submit as submit_task
from tests.support.oss_deployment import baton

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
PAGE = "docs/fan-out.md"
(FLOWS,) = blocks(PAGE, "A failure budget", "yaml")
(HELD_STEP,) = blocks(PAGE, "Hold and redrive", "yaml")
HELD = """
  patch_held:
    parameters:
      hosts: {type: array, required: true}
    steps:
""" + textwrap.indent(HELD_STEP, "      ")
# A tolerated item's own rollback that hangs its first attempt (the fault) and runs into its
# timeout: the other items of the step end while it still rolls back.
SLOW_UNDO = """
  patch_slow_undo:
    parameters:
      hosts: {type: array, required: true}
    steps:
      - name: patch
        for_each: hosts
        max_parallel: 20
        tolerate: {count: 1}
        normal:   {module: fleet, command: patch}
        rollback: {module: fleet, command: unpatch, timeout: 3, retry: 1}
"""


@pytest.fixture(scope="module")
def deployment(rabbitmq_url, tmp_path_factory):
    with fleet_deployment(tmp_path_factory.mktemp("budget"), rabbitmq_url, "version: 1\n" + FLOWS + HELD + SLOW_UNDO) as deployed:
        yield deployed


def submit(base: str, hosts: int, failing: list[int], task_type: str = "patch_fleet", times: int | None = None) -> str:
    return submit_task(base, task_type, {"hosts": [f"h{i}" for i in range(hosts)], "_baton_faults": patch_faults(failing, times)})


def test_within_the_budget_the_failed_hosts_roll_back_on_their_own_and_the_task_succeeds(deployment):
    cluster, base = deployment
    task_id = submit(base, hosts=200, failing=[17, 150])  # 1 % of 200: 2 may fail
    task = final(cluster, base, task_id)

    assert task["TaskStatusName"] == "SUCCESS", task["TaskMessage"]
    assert task["FailedItems"] == 2 and task["TaskMessage"] == "succeeded with 2 failed items (patch)"
    patch = task["Steps"][0]
    assert patch["FailedItems"] == 2 and patch["ItemCounts"] == {"succeeded": 198, "rolled_back": 2}
    assert patch["Tolerate"] == {"Percent": 1.0}
    assert "tolerates 1% of items, 2 failed" in patch["Shown"]["Note"]
    # The side effects: every other host patched once, each failed host undone once, nothing
    # else undone, and the step after ran.
    assert effects(cluster, task_id, "patch") == Counter(set(range(200)) - {17, 150})
    assert effects(cluster, task_id, "unpatch") == Counter({17: 1, 150: 1})
    assert sum(effects(cluster, task_id, "report").values()) == 1

    listed = http("GET", f"{base}/api/v1/tasks?failed_items=true")[1]
    assert task_id in [t["TaskId"] for t in listed["items"]]
    assert all(t["FailedItems"] for t in listed["items"])
    failed = http("GET", f"{base}/api/v1/tasks/{task_id}/steps/patch/items?state=rolled_back")[1]
    assert [i["Item"] for i in failed["Items"]] == [17, 150]
    assert all(i["Code"] != 0 and i["Message"] for i in failed["Items"])

    shown = baton(cluster, "get", task_id)
    assert shown.returncode == 0, shown.stderr
    assert "message: succeeded with 2 failed items (patch)" in shown.stdout
    (line,) = [line for line in shown.stdout.splitlines() if line.startswith("  [0] patch")]
    assert "198 succeeded" in line and "2 rolled_back" in line and "2 of 200 items failed within its budget" in line, line
    items = baton(cluster, "get", task_id, "--items", "patch", "--state", "rolled_back")
    assert items.returncode == 0 and "h17" in items.stdout and "h150" in items.stdout, items.stdout
    listing = baton(cluster, "list", "--failed-items")
    assert listing.returncode == 0 and task_id in listing.stdout, listing.stderr


def test_past_the_budget_the_task_rolls_back_each_host_once(deployment):
    cluster, base = deployment
    # 1 % of 100: the second failure is one too many. Both in one chain (max_parallel 20: items
    # 5, 25, 45, 65, 85 run one after the other), so 65 fails second whatever the timing.
    task_id = submit(base, hosts=100, failing=[5, 65])
    task = final(cluster, base, task_id)

    assert task["TaskStatusName"] == "ROLLED_BACK", task["TaskMessage"]
    assert "item 65 failed" in task["TaskMessage"] and task.get("FailedItems") is None
    patched = effects(cluster, task_id, "patch")
    undone = effects(cluster, task_id, "unpatch")
    assert set(undone) == set(patched) | {5, 65} and set(undone.values()) == {1}
    assert not effects(cluster, task_id, "report")
    listed = http("GET", f"{base}/api/v1/tasks?failed_items=true")[1]
    assert task_id not in [t["TaskId"] for t in listed["items"]]
    assert TaskStatus[task["TaskStatusName"]] is TaskStatus.ROLLED_BACK


def test_the_step_waits_for_a_tolerated_items_rollback_that_outlasts_the_other_items(deployment):
    cluster, base = deployment
    # Item 20 is the last of its chain (max_parallel 20); items 21 ... 39, the other chains' last,
    # start with it and end while its rollback's first attempt hangs for its 3 s timeout.
    hang = {"command": "unpatch", "phase": "rollback", "item": 20, "action": "hang", "times": 1}
    parameters = {"hosts": [f"h{i}" for i in range(40)], "_baton_faults": [*patch_faults([20]), hang]}
    task_id = submit_task(base, "patch_slow_undo", parameters)
    task = final(cluster, base, task_id)

    assert task["TaskStatusName"] == "SUCCESS", task["TaskMessage"]
    assert task.get("FailedItems") == 1 and task["TaskMessage"] == "succeeded with 1 failed item (patch)", task
    patch = task["Steps"][0]
    assert patch["ItemCounts"] == {"succeeded": 39, "rolled_back": 1} and patch["RollbackAttempts"] == 2, patch
    assert effects(cluster, task_id, "patch") == Counter(set(range(40)) - {20})
    assert effects(cluster, task_id, "unpatch") == Counter({20: 1})  # the hung attempt never got to undo


def held(cluster, base: str, task_id: str) -> dict:
    wait_until(lambda: cluster.store.get(task_id).Held is not None, 300, f"task {task_id} held")
    return http("GET", f"{base}/api/v1/tasks/{task_id}")[1]


def test_a_held_task_redriven_by_two_operators_at_once_is_redriven_once_and_succeeds(deployment):
    cluster, base = deployment
    other = second_oss(cluster)
    # Hosts 10, 30, 50 fail within the budget of 3; host 70 holds the task. All four are in one
    # chain (max_parallel 20: 10, 30, 50, 70 run one after the other), so which failure is the
    # fourth never depends on timing. Each fails its first attempt only: the redrive's succeeds.
    task_id = submit(base, hosts=80, failing=[10, 30, 50, 70], task_type="patch_held", times=1)
    task = held(cluster, base, task_id)
    assert task["TaskStatusName"] == "RUNNING" and task["Held"]["Item"] == 70, task["TaskMessage"]
    assert task["TaskMessage"].startswith("held: step 0 (patch) item 70 failed")
    assert task["Paused"]["Actor"] == "baton"
    assert set(effects(cluster, task_id, "unpatch")) == {10, 30, 50}  # only the tolerated ones, on their own
    assert http("POST", f"{base}/api/v1/tasks/{task_id}/resume", {"reason": "go"})[0] == 409

    answers = posted_at_once([base, other], f"/api/v1/tasks/{task_id}/redrive", ["a: mirror back", "b: mirror back"])
    assert answers == [200, 409], answers

    task = final(cluster, base, task_id)
    assert task["TaskStatusName"] == "SUCCESS" and task["FailedItems"] == 3, task["TaskMessage"]
    assert [e["Event"] for e in task["History"]].count("redriven") == 1
    patched = effects(cluster, task_id, "patch")
    assert patched == Counter(set(range(80)) - {10, 30, 50})  # each once, across the run and the redrive
    assert effects(cluster, task_id, "unpatch") == Counter({10: 1, 30: 1, 50: 1})


def test_baton_rollback_of_a_held_task_undoes_each_patched_host_once(deployment):
    cluster, base = deployment
    task_id = submit(base, hosts=60, failing=[5, 15, 25, 35], task_type="patch_held")
    held(cluster, base, task_id)
    refused = baton(cluster, "redrive", "no-such-task", "--reason", "x")
    assert refused.returncode == 3, refused.stderr
    done = baton(cluster, "rollback", task_id, "--reason", "bad patch")
    assert done.returncode == 0, done.stderr
    again = baton(cluster, "redrive", task_id, "--reason", "too late")
    assert again.returncode == 4 and "not held" in again.stderr, again.stderr
    task = final(cluster, base, task_id)
    assert task["TaskStatusName"] == "ROLLED_BACK", task["TaskMessage"]
    patched, undone = effects(cluster, task_id, "patch"), effects(cluster, task_id, "unpatch")
    assert set(undone) == set(patched) | {5, 15, 25, 35} and set(undone.values()) == {1}
