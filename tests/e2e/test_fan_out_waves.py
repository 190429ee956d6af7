"""docs/fan-out.md, "Waves", run for real: its flows.yaml on a real module process
(tests/support/patch_commands.py counts side effects in a ledger), a sweeper and two OSS in
processes of their own, the real RabbitMQ, the task submitted and acted on over REST and through
the `baton` CLI as its own process.

- The canary wave runs alone and the step waits for an operator's continue: the next wave's
  items are not claimed (0 of them patched, every one waiting); the task view says where the
  step is and offers `continue`. Two OSS asked to continue at once: one does, the other answers
  409; `baton continue` afterwards is refused (exit 4). The bake between the second and the last
  wave ends at its stored time; every host is patched exactly once, each wave's hosts before
  the next wave's.
- The second wave's check runs once, as a task of its own, on that wave's items, after the bake
  and before any host of the last wave; a check that fails stops the last wave (0 of its items
  claimed) and the task rolls back.
- A bake outlives the process that began it: the module whose item ended the wave is killed
  with SIGKILL during the bake; the sweeper ends the bake at the stored time (no module
  running) and starts the check, and the restarted module finishes the task, every host
  patched once.
- The canary's own budget (no failure) fails the step at the canary's failure, whatever the
  step's 10 %: no host of the next wave is patched, the canary is undone once.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.deploy.support import http
from tests.support.cluster import wait_until
from tests.support.doc_examples import blocks
from tests.support.fleet_deployment import effects, final, fleet_deployment, patch_faults, posted_at_once, second_oss
from tests.support.fleet_deployment import submit as submit_task
from tests.support.ledger_file import read_ledger
from tests.support.oss_deployment import baton

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
(FLOWS,) = blocks("docs/fan-out.md", "Waves", "yaml")
BAKE = 3  # seconds: the page's 5m, shortened for the test
HOSTS = 12  # waves of 1, 5 and 6


@pytest.fixture(scope="module")
def deployment(rabbitmq_url, tmp_path_factory):
    flows = "version: 1\n" + FLOWS.replace("bake: 5m", f"bake: {BAKE}s")
    with fleet_deployment(tmp_path_factory.mktemp("waves"), rabbitmq_url, flows) as deployed:
        yield deployed


def submit(base: str, failing: list[int] = (), check_fails: bool = False) -> str:
    faults = patch_faults(failing)
    faults += [{"command": "check_wave", "action": "fail", "retryable": False}] if check_fails else []
    return submit_task(base, "patch_in_waves", {"hosts": [f"h{i}" for i in range(HOSTS)], "_baton_faults": faults})


def test_the_dry_run_plan_lists_the_waves_and_their_gates(deployment):
    cluster, base = deployment
    status, answer = http("POST", f"{base}/api/v1/tasks", {
        "task_type": "patch_in_waves", "parameters": {"hosts": [f"h{i}" for i in range(HOSTS)]}, "dry_run": True})
    assert status == 200, answer
    plan = answer.get("plan", answer)
    (patch,) = [s for s in plan["steps"] if s["name"] == "patch"]
    assert patch["for_each"]["waves"] == ["1 item (tolerates 0 items), then pause for continue",
                                          f"5 items, then bake {BAKE}s, then check fleet.check_wave", "6 items"]
    hosts = ",".join(f'"h{i}"' for i in range(HOSTS))
    shown = baton(cluster, "submit", "patch_in_waves", f"hosts=[{hosts}]", "--plan")
    assert "in waves: 1 item" in shown.stdout, (shown.stdout, shown.stderr)


def paused(cluster, task_id: str) -> bool:
    wave = cluster.store.get(task_id).Steps[0].Wave
    return wave is not None and wave.Phase == "paused"


def test_the_canary_waits_for_one_continue_then_the_waves_run_in_order(deployment):
    cluster, base = deployment
    other = second_oss(cluster)
    task_id = submit(base)
    wait_until(lambda: paused(cluster, task_id), 120, "the canary's wave paused")

    status, task = http("GET", f"{base}/api/v1/tasks/{task_id}")
    assert status == 200 and task["TaskStatusName"] == "RUNNING", task
    patch = task["Steps"][0]
    assert patch["ItemCounts"] == {"succeeded": 1, "waiting": HOSTS - 1}  # none of the next wave claimed
    assert "wave 1 of 3 ended (waits for continue; ended: 1 done)" in patch["Shown"]["Note"], patch["Shown"]
    assert [a["Name"] for a in patch["Shown"]["Actions"]] == ["continue"], patch["Shown"]
    assert effects(cluster, task_id, "patch") == Counter({0: 1})
    shown = baton(cluster, "get", task_id)
    assert shown.returncode == 0 and "wave 1 of 3 ended (waits for continue; ended: 1 done)" in shown.stdout, shown.stdout
    assert f"waits for continue: baton continue {task_id} patch --reason ..." in shown.stdout, shown.stdout

    answers = posted_at_once([base, other], f"/api/v1/tasks/{task_id}/steps/patch/actions/continue",
                             ["a: canary healthy", "b: canary healthy"])
    assert answers == [200, 409], answers
    late = baton(cluster, "continue", task_id, "patch", "--reason", "me too")
    assert late.returncode == 4 and "waits for no continue" in late.stderr, late.stderr

    task = final(cluster, base, task_id)
    assert task["TaskStatusName"] == "SUCCESS", task["TaskMessage"]
    assert effects(cluster, task_id, "patch") == Counter(range(HOSTS))
    events = [e["Event"] for e in task["History"]]
    assert events.count("wave_continued") == 1 and events.count("wave_started") == 2
    assert task["Steps"][0]["Wave"]["Tallies"] == [[1, 0], [5, 0]]
    # Each wave's hosts were patched before any host of the next wave: the ledger's order.
    order = [n["item"] for n in read_ledger(cluster.ledger) if n["task"] == task_id and n["op"] == "patch"]
    waves = [0 if item < 1 else 1 if item < 6 else 2 for item in order]
    assert waves == sorted(waves), order
    started = [e for e in task["History"] if e["Event"] == "wave_started"]
    ended = [e for e in task["History"] if e["Event"] == "wave_ended"]
    assert started[1]["Time"] - ended[1]["Time"] >= BAKE, (ended, started)  # the bake was waited out
    # The second wave's check ran once, as a task of its own, on that wave's items, before the last wave.
    notes = read_ledger(cluster.ledger)
    (check,) = [n for n in notes if n["op"] == "check" and n["task"] == f"{task_id}.0.wave2"]
    assert check["items"] == [1, 2, 3, 4, 5] and check["wave"] == 2
    last = [n["time"] for n in notes if n["task"] == task_id and n["op"] == "patch" and n["item"] >= 6]
    assert check["time"] < min(last) and events.count("wave_checked") == 1
    status, shown = http("GET", f"{base}/api/v1/tasks/{task_id}.0.wave2")  # the check's own task, as any task
    assert status == 200 and shown["TaskStatusName"] == "SUCCESS" and shown["Parent"]["TaskId"] == task_id, shown
    status, listed = http("GET", f"{base}/api/v1/tasks?limit=200")
    assert status == 200 and f"{task_id}.0.wave2" in [t["TaskId"] for t in listed["items"]]


def test_a_failed_check_stops_the_next_wave_and_the_task_rolls_back(deployment):
    cluster, base = deployment
    task_id = submit(base, check_fails=True)
    wait_until(lambda: paused(cluster, task_id), 120, "the canary's wave paused")
    assert http("POST", f"{base}/api/v1/tasks/{task_id}/steps/patch/actions/continue", {"reason": "go"})[0] == 200
    task = final(cluster, base, task_id)
    assert task["TaskStatusName"] == "ROLLED_BACK", task["TaskMessage"]
    assert "wave 2 of 3: its check (task" in task["TaskMessage"], task["TaskMessage"]
    assert effects(cluster, task_id, "patch") == Counter(range(6))  # the last wave: 0 items claimed
    assert effects(cluster, task_id, "unpatch") == Counter(range(6))
    assert task["Steps"][0]["ItemCounts"].get("waiting") == HOSTS - 6
    assert task["Steps"][0]["Wave"]["Index"] == 1


def test_the_canarys_own_budget_fails_the_step_and_no_host_of_the_next_wave_is_patched(deployment):
    cluster, base = deployment
    task_id = submit(base, failing=[0])
    task = final(cluster, base, task_id)
    assert task["TaskStatusName"] == "ROLLED_BACK", task["TaskMessage"]
    assert effects(cluster, task_id, "patch") == Counter()  # the canary failed: nothing applied
    assert effects(cluster, task_id, "unpatch") == Counter({0: 1})
    assert task["Steps"][0]["ItemCounts"].get("waiting") == HOSTS - 1


def wave_at(cluster, task_id: str, index: int, phase: str) -> bool:
    wave = cluster.store.get(task_id).Steps[0].Wave
    return wave is not None and wave.Index == index and wave.Phase == phase


def test_a_bake_survives_kill_9_of_the_module_that_began_it(deployment):
    cluster, base = deployment
    task_id = submit(base)
    wait_until(lambda: paused(cluster, task_id), 120, "the canary's wave paused")
    status, _ = http("POST", f"{base}/api/v1/tasks/{task_id}/steps/patch/actions/continue", {"reason": "go on"})
    assert status == 200
    wait_until(lambda: wave_at(cluster, task_id, 1, "baking"), 120, "the second wave baking")
    cluster.kill("fleet")  # SIGKILL: the process that wrote the wave's end, and its timer for the bake, are gone
    until = cluster.store.get(task_id).Steps[0].Wave.Until
    try:  # the sweeper ends the bake and starts the wave's check (a task the dead module will run)
        wait_until(lambda: wave_at(cluster, task_id, 1, "checking"), 120, "the sweeper ended the bake")
    finally:
        cluster.restart("fleet")
    task = final(cluster, base, task_id)
    assert task["TaskStatusName"] == "SUCCESS", task["TaskMessage"]
    assert effects(cluster, task_id, "patch") == Counter(range(HOSTS))
    (checked,) = [e for e in task["History"] if e["Event"] == "wave_check_started"]
    assert checked["Time"] >= until, checked
    assert [e["Event"] for e in task["History"]].count("wave_started") == 2
