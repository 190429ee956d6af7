"""docs/fan-out.md, "Items from a source", run for real: a `for_each` over 2,000 hosts that a
module's command returns 500 at a time (tests/support/patch_commands.py `hosts`), on a real module
process, a sweeper and OSS in processes of their own and the real RabbitMQ; the task submitted over
REST and read over REST and through the `baton` CLI as its own process. Side effects are counted
in the module's ledger, not read from the task.

- Three hosts failing for good under a 1 % budget: the task succeeds with exactly those items
  failed and each rolled back once; every other host patched exactly once; no list of 2,000
  values in the task's parameters.
- The module killed with SIGKILL at every page, after the source answered and before the
  page's outcome was recorded: each page is fetched again and stored once, every host is
  inserted once under its index and patched under one idempotency key.
- The source failing at its third page: the step fails with the source's message, no host past
  the pages stored is patched, and every host patched is undone exactly once.
"""

from __future__ import annotations

from collections import Counter

import pytest

from common.engine.states import FINAL_STATUSES
from tests.deploy.support import http
from tests.support.cluster import wait_until
from tests.support.doc_examples import blocks
from tests.support.fleet_deployment import REGISTRY, effects, final, fleet_deployment, patch_faults
from tests.support.fleet_deployment import submit as submit_task
from tests.support.ledger_file import read_ledger
from tests.support.oss_deployment import baton

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
(FLOWS,) = blocks("docs/fan-out.md", "Items from a source", "yaml")
HOSTS = 2000
FLAKY = """
  patch_inventory_flaky:
    parameters:
      host_count: {type: integer, required: true}
      source_fails_at: {type: integer}
    steps:
      - name: patch
        for_each:
          source: {module: fleet, command: hosts, page_size: 500}
        max_parallel: 20
        normal:   {module: fleet, command: patch}
        rollback: {module: fleet, command: unpatch}
  patch_inventory_crashy:
    parameters:
      host_count: {type: integer, required: true}
    steps:
      - name: patch
        for_each:
          source: {module: fleet, command: hosts, page_size: 250}
        max_parallel: 10
        normal:   {module: fleet, command: patch, retry: 2}   # a page lost to a kill is retried
        rollback: {module: fleet, command: unpatch}
"""


@pytest.fixture(scope="module")
def deployment(rabbitmq_url, tmp_path_factory):
    with fleet_deployment(tmp_path_factory.mktemp("source"), rabbitmq_url, "version: 1\n" + FLOWS + FLAKY) as deployed:
        yield deployed


def submit(base: str, failing: list[int], task_type: str = "patch_inventory", **parameters: object) -> str:
    return submit_task(base, task_type, {"host_count": HOSTS, "_baton_faults": patch_faults(failing), **parameters})


def test_items_from_a_source_run_once_each_and_the_failed_ones_roll_back_within_the_budget(deployment):
    cluster, base = deployment
    failing = [17, 1500, 1999]  # the first page's, a middle page's and the last page's last item
    task_id = submit(base, failing)
    task = final(cluster, base, task_id, seconds=600)  # 2,000 hosts

    assert task["TaskStatusName"] == "SUCCESS", task["TaskMessage"]
    assert task["FailedItems"] == 3 and task["TaskMessage"] == "succeeded with 3 failed items (patch)"
    patch = task["Steps"][0]
    assert patch["ItemCount"] == HOSTS and patch["ItemCounts"] == {"succeeded": HOSTS - 3, "rolled_back": 3}
    assert patch["Paging"]["Done"] and patch["Paging"]["Fetched"] == HOSTS and patch["Paging"]["Page"] == 4
    assert patch["Shown"]["Note"].startswith("for_each source fleet.hosts: 1997/2000"), patch["Shown"]["Note"]
    assert "patch" not in task["Parameters"]  # the outputs stay in the records
    assert effects(cluster, task_id, "patch") == Counter(set(range(HOSTS)) - set(failing))
    assert effects(cluster, task_id, "unpatch") == Counter({item: 1 for item in failing})
    status, failed = http("GET", f"{base}/api/v1/tasks/{task_id}/steps/patch/items?failed=true")
    assert status == 200, failed
    assert [(i["Item"], i["Value"]) for i in failed["Items"]] == [(i, f"h{i}") for i in failing]

    shown = baton(cluster, "get", task_id)
    assert shown.returncode == 0 and "succeeded with 3 failed items (patch)" in shown.stdout, shown.stderr
    items = baton(cluster, "get", task_id, "--items", "patch", "--failed")
    assert items.returncode == 0 and all(f"h{i}" in items.stdout for i in failing), items.stdout


def test_a_source_failing_for_good_fails_the_step_and_undoes_what_ran(deployment):
    cluster, base = deployment
    task_id = submit(base, [], "patch_inventory_flaky", source_fails_at=1000)  # its third page (500 a page)
    task = final(cluster, base, task_id, seconds=600)

    assert task["TaskStatusName"] == "ROLLED_BACK", task["TaskMessage"]
    patch = task["Steps"][0]
    assert patch["Paging"]["Failed"] and "inventory unreachable at host 1000" in patch["Paging"]["Failed"]
    assert patch["ItemCount"] == 1000 and "its source failed" in patch["Message"], patch
    patched, undone = effects(cluster, task_id, "patch"), effects(cluster, task_id, "unpatch")
    assert patched and max(patched) < 1000 and set(patched.values()) == {1}
    assert undone == patched  # each host that ran undone once, none past the pages stored


def test_a_module_killed_while_it_fetched_each_page_stores_each_item_once(deployment):
    cluster, base = deployment
    hosts = 500
    crash = [{"command": "hosts", "action": "crash", "at": "before_commit", "times": 1}]  # each page's first attempt
    task_id, kills = submit_task(base, "patch_inventory_crashy", {"host_count": hosts, "_baton_faults": crash}), 0

    def settled_or_restarted() -> bool:
        nonlocal kills
        proc = cluster.procs["fleet"]
        if proc.popen.poll() is not None:  # killed itself at the crash point: start it again
            kills += 1
            cluster.start_module("fleet", registry=REGISTRY)
        task = cluster.store.get(task_id)
        return task.TaskStatus in FINAL_STATUSES and not task.Outbox

    wait_until(settled_or_restarted, 600, f"task {task_id} final")
    task = http("GET", f"{base}/api/v1/tasks/{task_id}")[1]
    assert task["TaskStatusName"] == "SUCCESS", task["TaskMessage"]
    assert kills == 2, kills  # one per page: 2 pages of 250
    patch = task["Steps"][0]
    assert patch["ItemCount"] == hosts and patch["Paging"]["Fetched"] == hosts and patch["Paging"]["Page"] == 2
    values, after = [], None
    while True:
        query = "limit=500" + (f"&after={after}" if after is not None else "")
        page = http("GET", f"{base}/api/v1/tasks/{task_id}/steps/patch/items?{query}")[1]
        values += [(i["Item"], i["Value"]) for i in page["Items"]]
        if (after := page["NextAfter"]) is None:
            break
    assert values == [(i, f"h{i}") for i in range(hosts)]  # each once, under the index its page fixed
    # A kill also stops the items running in that module: each is run again under its one
    # idempotency key (an idempotent command applies it once); no item runs under two.
    keys: dict[int, set[str]] = {}
    for line in read_ledger(cluster.ledger):
        if line["task"] == task_id and line["op"] == "patch":
            keys.setdefault(line["item"], set()).add(line["key"])
    assert sorted(keys) == list(range(hosts)) and {len(k) for k in keys.values()} == {1}
