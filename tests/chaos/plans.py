"""Task plans of the chaos scenarios: the flows file, fault rules, and the mix of outcomes."""

from __future__ import annotations

import os
import random

from common.queues import dead_letter_queue
from common.engine.states import TaskStatus

FULL = os.environ.get("BATON_CHAOS", "").lower() == "full"
# pytest-timeout's bound on a scenario: a guard against a hang, not a measure. Each wait inside a
# scenario is for a state and has its own deadline (tests/support/cluster.py STATE_DEADLINE);
# on a loaded 2-core machine a reduced scenario's waits add up to several minutes.
SCENARIO_TIMEOUT = 1800 if FULL else 900
MODULES = ("resource", "mysql", "monitor")
FLEET = "fleet"  # the module of tests/chaos/fleet_commands.py (the fleet scenario's)
QUEUES = (*MODULES, FLEET, "baton.alarms")
ALL_QUEUES = (*QUEUES, *(dead_letter_queue(q) for q in QUEUES))


def scale(reduced, full):
    """The reduced figure in the normal test run, the full one under BATON_CHAOS=full."""
    return full if FULL else reduced


# Retries differ per step so that one rule on the shared `noop` command fails a chosen step:
# a rule failing attempts 1..t fails step a when t > 3, step b when t > 2, step c when t > 1.
CHAOS_FLOWS = """
version: 1
defaults:
  timeout: 5
  retry: 1
  backoff: {initial: 0.05, max: 0.2, multiplier: 2, jitter: 0.2}
task_types:
  chaos_demo:
    description: the demo flow (three no-op steps, one per module, each with a rollback)
    steps: &demo_steps
      - name: demo_a
        normal:   {module: resource, command: noop, retry: 3}
        rollback: {module: resource, command: noop_rollback, retry: 1}
      - name: demo_b
        normal:   {module: mysql, command: noop, retry: 2}
        rollback: {module: mysql, command: noop_rollback, retry: 1}
      - name: demo_c
        normal:   {module: monitor, command: noop, retry: 1}
        rollback: {module: monitor, command: noop_rollback, retry: 2}
  chaos_graph:
    description: a diamond whose one branch fans out over four items, on all three modules
    parameters:
      plan: {type: string}
      nodes: {type: array, default: [0, 1, 2, 3]}
    steps:
      - name: root
        normal:   {module: resource, command: noop}
        rollback: {module: resource, command: noop_rollback, retry: 1}
      - name: fan
        after: [root]
        for_each: nodes
        max_parallel: 3
        normal:   {module: mysql, command: noop}
        rollback: {module: mysql, command: noop_rollback, retry: 1}
      - name: side
        after: [root]
        normal:   {module: monitor, command: noop}
        rollback: {module: monitor, command: noop_rollback, retry: 1}
      - name: join
        after: [fan, side]
        normal:   {module: resource, command: noop}
        rollback: {module: resource, command: noop_rollback, retry: 1}
  chaos_hang:
    description: one step whose command may hang; timeout 2 s, 2 retries
    steps:
      - name: hang
        normal:   {module: mysql, command: noop, timeout: 2, retry: 2,
                   backoff: {initial: 0.1, max: 0.2, multiplier: 2, jitter: 0}}
        rollback: {module: mysql, command: noop_rollback, timeout: 2, retry: 2}
  chaos_slow:
    description: one step on resource whose first attempt hangs until its timeout
    steps:
      - name: slow
        normal:   {module: resource, command: noop, timeout: 3, retry: 2}
        rollback: {module: resource, command: noop_rollback, retry: 2}
  chaos_sub:
    description: a step, the chaos_demo flow as a child task, a step
    parameters:
      plan: {type: string}
    steps:
      - name: before
        normal:   {module: monitor, command: noop, retry: 3}
        rollback: {module: monitor, command: noop_rollback, retry: 3}
      - name: child
        flow: chaos_demo
      # A command of its own, so that one rule fails this step alone (its child is then undone):
      # giving back a reservation this task never made changes nothing.
      - name: after
        normal:   {module: resource, command: restore_resource, retry: 3}
        rollback: {module: resource, command: noop_rollback, retry: 3}
  chaos_locked:
    description: the chaos_demo steps under a lock on their pool, two tasks of a pool at a time
    lock: {key: "pool:{pool}", limit: 2}
    parameters:
      plan: {type: string}
      pool: {type: string, required: true}
    steps: *demo_steps  # the chaos_demo steps
  chaos_fleet:
    description: a for_each over many nodes (items in records) between two steps, on the fleet module
    parameters:
      nodes: {type: array, required: true}
    steps:
      - name: prepare
        normal:   {module: fleet, command: apply, retry: 5}
        rollback: {module: fleet, command: undo, retry: 8}
      - name: each
        for_each: nodes
        max_parallel: 8
        normal:   {module: fleet, command: apply, retry: 5}
        rollback: {module: fleet, command: undo, retry: 8}
      - name: finish
        normal:   {module: fleet, command: apply, retry: 5}
        rollback: {module: fleet, command: undo, retry: 8}
  chaos_rollout:
    description: a for_each in waves with a bake between them and a failure budget, held past it, on the fleet module
    parameters:
      nodes: {type: array, required: true}
      work_seconds: {type: number, default: 0}
    steps:
      - name: roll
        for_each: nodes
        max_parallel: 4
        tolerate: {count: 3}
        on_failure: hold
        waves: [{size: "10%", tolerate: {count: 1}}, "30%", rest]  # the canary: a budget of its own too
        between_waves: {bake: 1s}
        normal:   {module: fleet, command: apply, retry: 5}
        rollback: {module: fleet, command: undo, retry: 8}
  chaos_rollout_checked:
    description: a for_each in waves whose first wave's health check decides whether the rest start
    parameters:
      nodes: {type: array, required: true}
      work_seconds: {type: number, default: 0}
    steps:
      - name: roll
        for_each: nodes
        max_parallel: 4
        waves:
          - {size: "25%", check: {module: fleet, command: check_wave}}
          - rest
        normal:   {module: fleet, command: apply, retry: 5}
        rollback: {module: fleet, command: undo, retry: 8}
  chaos_async:
    description: two async steps on the fleet module, each awaiting the file `gate`, then `seconds`
    parameters:
      seconds: {type: number, default: 0.5}
      gate: {type: string, default: ""}
    steps:
      - name: hold
        normal:   {module: fleet, command: await_apply, timeout: 120, retry: 5}
        rollback: {module: fleet, command: await_undo, timeout: 120, retry: 8}
      - name: confirm
        normal:   {module: fleet, command: await_confirm, timeout: 120, retry: 5}
        rollback: {module: fleet, command: await_undo, timeout: 120, retry: 8}
  chaos_mysql:
    description: the real create flow (inventory and MariaDB), without the announcement
    steps:
      - name: check_resource
        normal:   {module: resource, command: check_resource, timeout: 10, retry: 1}
        rollback: {module: resource, command: restore_resource, timeout: 10, retry: 3}
      - name: init_instance
        normal:   {module: mysql, command: init_instance, timeout: 30, retry: 1}
        rollback: {module: mysql, command: clean_instance, timeout: 30, retry: 5}
      - name: deduct_resource
        normal:   {module: resource, command: deduct_resource, timeout: 10, retry: 1}
        rollback: {module: resource, command: restore_resource, timeout: 10, retry: 3}
"""


def fail(times: int | None = None, phase: str = "normal") -> dict:
    command = "noop" if phase == "normal" else "noop_rollback"
    rule = {"command": command, "action": "fail", "phase": phase}
    if times is not None:
        rule["times"] = times
    return rule


def crash(at: str, phase: str = "normal") -> dict:
    return {"command": "noop" if phase == "normal" else "noop_rollback", "action": "crash", "at": at, "phase": phase}


# name -> (share of tasks, faults, the status the plan leads to without any other fault)
PLANS: dict[str, tuple[float, list[dict], TaskStatus]] = {
    "ok": (0.58, [], TaskStatus.SUCCESS),
    "retry": (0.10, [fail(1)], TaskStatus.SUCCESS),  # every step fails once, then works
    "fail_c": (0.08, [fail(2)], TaskStatus.ROLLED_BACK),  # rolls back c, b, a
    "fail_b": (0.08, [fail(3)], TaskStatus.ROLLED_BACK),  # rolls back b, a
    "fail_a": (0.08, [fail()], TaskStatus.ROLLED_BACK),  # rolls back a
    "rb_fail": (0.08, [fail(2), fail(2, "rollback")], TaskStatus.ROLLBACK_FAILED),  # c undone, b's undo fails
}


# The same for chaos_graph: every unit's first attempt fails (retry 1: it succeeds), one item
# fails for good (the other items drain or are cancelled, then everything applied is undone), or
# that and every rollback fails (the first to run ends the task rollback failed).
GRAPH_PLANS: dict[str, tuple[float, list[dict], TaskStatus]] = {
    "ok": (0.5, [], TaskStatus.SUCCESS),
    "retry": (0.2, [fail(1)], TaskStatus.SUCCESS),
    "fail_item": (0.2, [{"command": "noop", "action": "fail", "item": 2}], TaskStatus.ROLLED_BACK),
    "rb_fail": (0.1, [{"command": "noop", "action": "fail", "item": 2}, fail(phase="rollback")],
                TaskStatus.ROLLBACK_FAILED),
}


# chaos_sub: the rules reach the child (it inherits `_baton_faults`). The parent's own steps
# retry 3, so two failed attempts only fail the child's demo_c: the child rolls back, the
# parent's unit failed already clean, the parent rolls back `before`; with the rollback rule the
# child's demo_b undo fails, and the parent ends rollback failed too. `after` failing undoes the
# child that succeeded (it rolls back every step), then `before`.
SUB_PLANS: dict[str, tuple[float, list[dict], TaskStatus]] = {
    "ok": (0.4, [], TaskStatus.SUCCESS),
    "retry": (0.15, [fail(1)], TaskStatus.SUCCESS),
    "fail_child": (0.15, [fail(2)], TaskStatus.ROLLED_BACK),
    "undo_child": (0.2, [{"command": "restore_resource", "action": "fail", "retryable": False}], TaskStatus.ROLLED_BACK),
    "rb_fail": (0.1, [fail(2), fail(2, "rollback")], TaskStatus.ROLLBACK_FAILED),
}

# chaos_locked: the line plans but the one ending rollback failed, which keeps its lock until an
# operator acts (by design): two of them on a pool of limit 2 would hold the rest forever.
LOCKED_PLANS = {name: plan for name, plan in PLANS.items() if plan[2] is not TaskStatus.ROLLBACK_FAILED}

# chaos_mysql, the real create flow: deduct_resource or init_instance refuses for good (not
# retryable), so the task undoes what it made in MariaDB and gives the reservation back.
DEDUCT_FAILS = [{"command": "deduct_resource", "action": "fail", "retryable": False}]
INIT_FAILS = [{"command": "init_instance", "action": "fail", "retryable": False}]
MYSQL_PLANS: dict[str, tuple[float, list[dict], TaskStatus]] = {
    "ok": (0.6, [], TaskStatus.SUCCESS),
    "deduct_fails": (0.25, DEDUCT_FAILS, TaskStatus.ROLLED_BACK),
    "init_fails": (0.15, INIT_FAILS, TaskStatus.ROLLED_BACK),
}


def plan_tasks(count: int, seed: int, plans: dict | None = None) -> list[tuple[str, list[dict], TaskStatus]]:
    """A deterministic mix of plans with each plan present at least once when count allows."""
    plans = plans or PLANS
    rng = random.Random(seed)
    names = list(plans)
    picks = names[: min(count, len(names))]
    picks += rng.choices(names, weights=[plans[n][0] for n in names], k=count - len(picks))
    rng.shuffle(picks)
    return [(name, plans[name][1], plans[name][2]) for name in picks]
