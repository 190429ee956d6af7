"""docs/fan-out.md, "Waves over a source", run for real: a rollout over 1,500 hosts that a
module's command returns 250 at a time (tests/support/patch_commands.py `hosts`), in waves
`[100, "40%", rest]` with a check between them, on a real module process, a sweeper and OSS in
processes of their own and the real RabbitMQ; submitted over REST, read over REST and through the
`baton` CLI as its own process. Side effects are counted in the module's ledger.

- With the source's total and without it, the waves are 100, 600 (40 % of 1,500) and 800 hosts:
  every host patched once (the two failing within the 1 % budget undone once), each wave's hosts
  before any of the next wave's, each check after its wave and before the next.
- The check of the 600-host wave is given 500 of its items, the failed one first, with the
  wave's count, its tally and that it was cut.
- The dry-run plan lists the source and the waves as written; `baton submit --plan` too.
- A cancel with `--stop-running` (the CLI) while a wave's check hangs: the check's task is
  cancelled and its command stopped, the rollout rolls back, no host of the next wave patched.
"""

from __future__ import annotations

from collections import Counter

import pytest

from common.engine.states import FINAL_STATUSES, RunState
from tests.deploy.support import http
from tests.support.cluster import wait_until
from tests.support.doc_examples import blocks
from tests.support.fleet_deployment import effects, final, fleet_deployment, patch_faults
from tests.support.fleet_deployment import submit as submit_task
from tests.support.ledger_file import read_ledger
from tests.support.oss_deployment import baton

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
(FLOWS,) = blocks("docs/fan-out.md", "Waves over a source", "yaml")
HOSTS = 1500
ENDS = [100, 700, 1500]  # 100, then 40 % of 1,500, then the rest
FAILING = [150, 1200]


@pytest.fixture(scope="module")
def deployment(rabbitmq_url, tmp_path_factory):
    with fleet_deployment(tmp_path_factory.mktemp("source-waves"), rabbitmq_url, "version: 1\n" + FLOWS) as deployed:
        yield deployed


def submit(base: str, hosts: int = HOSTS, faults: list[dict] = (), **parameters: object) -> str:
    return submit_task(base, "patch_inventory_in_waves", {
        "host_count": hosts, "_baton_faults": [*faults, *patch_faults(FAILING)], **parameters})


def wave_of(item: int) -> int:
    return next(index for index, end in enumerate(ENDS) if item < end)


@pytest.mark.parametrize("hide_total", [False, True], ids=["with its total", "without a total"])
def test_a_rollout_from_a_source_runs_in_waves_each_checked(deployment, hide_total):
    cluster, base = deployment
    task_id = submit(base, hide_total=hide_total)
    task = final(cluster, base, task_id, seconds=600)

    assert task["TaskStatusName"] == "SUCCESS", task["TaskMessage"]
    assert task["FailedItems"] == 2, task["TaskMessage"]
    patch = task["Steps"][0]
    assert patch["Wave"]["Ends"] == ENDS and patch["Wave"]["Tallies"] == [[100, 0], [599, 1]], patch["Wave"]
    assert effects(cluster, task_id, "patch") == Counter(set(range(HOSTS)) - set(FAILING))
    assert effects(cluster, task_id, "unpatch") == Counter({item: 1 for item in FAILING})
    notes = [n for n in read_ledger(cluster.ledger) if n["task"].startswith(task_id)]
    order = [wave_of(n["item"]) for n in notes if n["task"] == task_id and n["op"] == "patch"]
    assert order == sorted(order)  # no host of a wave before every host of the wave before it
    checks = {n["wave"]: n for n in notes if n["op"] == "check"}
    assert sorted(checks) == [1, 2], checks.keys()
    patched = [n for n in notes if n["task"] == task_id and n["op"] == "patch"]
    for wave, check in checks.items():  # each check after its wave, before any host of the next
        before = [n["time"] for n in patched if wave_of(n["item"]) < wave]
        after = [n["time"] for n in patched if wave_of(n["item"]) >= wave]
        assert max(before) < check["time"] < min(after), wave
    assert checks[1]["items"] == list(range(100)) and checks[1]["truncated"] is False
    second = checks[2]
    assert (second["item_count"], second["truncated"], second["failed"]) == (600, True, 1)
    assert len(second["items"]) == 500 and second["items"][0] == 150 and second["items"][1:4] == [100, 101, 102]
    assert second["page"] == {"task": task_id, "step": "patch", "after": 99, "until": 700}
    status, page = http("GET", f"{base}/api/v1/tasks/{task_id}/steps/patch/items?after=99&limit=500")
    assert status == 200 and page["Items"][0]["Item"] == 100  # where the check pages the rest
    shown = baton(cluster, "get", task_id)
    assert shown.returncode == 0 and "wave 3 of 3" in shown.stdout, shown.stdout


def test_the_dry_run_plan_lists_the_source_and_its_waves(deployment):
    cluster, base = deployment
    status, answer = http("POST", f"{base}/api/v1/tasks", {
        "task_type": "patch_inventory_in_waves", "parameters": {"host_count": HOSTS}, "dry_run": True})
    assert status == 200, answer
    plan = answer.get("plan", answer)
    (patch,) = [s for s in plan["steps"] if s["name"] == "patch"]
    assert patch["for_each"]["source"] == "fleet.hosts" and patch["for_each"]["items"] is None
    assert patch["for_each"]["waves"] == ["100 items, then check fleet.check_wave",
                                          "40%, then check fleet.check_wave", "rest"], patch["for_each"]
    shown = baton(cluster, "submit", "patch_inventory_in_waves", f"host_count={HOSTS}", "--plan")
    assert shown.returncode == 0 and "in waves: 100 items" in shown.stdout, (shown.stdout, shown.stderr)


def _check_claimed(cluster, task_id: str) -> bool:
    check = cluster.store.get(f"{task_id}.0.wave1")
    return check is not None and any(run.State is RunState.RUNNING for run in check.Runs)


def test_a_cancel_stopping_what_runs_stops_a_hanging_check_and_the_rollout_rolls_back(deployment):
    cluster, base = deployment
    task_id = submit(base, hosts=300, faults=[{"command": "check_wave", "action": "hang"}])
    wait_until(lambda: _check_claimed(cluster, task_id), 180, "the first wave's check running")

    done = baton(cluster, "cancel", task_id, "--reason", "the canary looks wrong", "--stop-running")
    assert done.returncode == 0, done.stderr
    task = final(cluster, base, task_id, seconds=600)
    assert task["TaskStatusName"] == "ROLLED_BACK", task["TaskMessage"]
    assert "wave_check_cancelled" in [e["Event"] for e in task["History"]]

    def check_ended() -> bool:
        return cluster.store.get(f"{task_id}.0.wave1").TaskStatus in FINAL_STATUSES

    wait_until(check_ended, 30, "the check's task stopped")  # its command hangs on, up to its 60 s timeout
    status, check = http("GET", f"{base}/api/v1/tasks/{task_id}.0.wave1")
    assert status == 200 and check["TaskStatusName"] == "ROLLED_BACK", check
    (asked,) = [e for e in check["History"] if e["Event"] == "cancel_requested"]
    assert asked["Actor"] == f"parent {task_id}" and "the canary looks wrong" in asked["Message"], asked
    assert "stopped" in [e["Event"] for e in check["History"]]
    assert effects(cluster, task_id, "patch") == Counter(range(100))  # the next wave: no host patched
    assert effects(cluster, task_id, "unpatch") == Counter(range(100))
