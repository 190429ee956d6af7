"""OSS served for a real browser: uvicorn on 127.0.0.1 (a free port) in a thread, the SQLite
store, the in-process broker, and the module runtimes in this process (as `baton demo` runs
them: the real runtime, each command in a child process) serving the engine tests' stand-in
commands. Faults come from the tasks' `_baton_faults`; the stand-in mysql runtime also consumes
the alarm queue with the monitor's own alarm handler, so failed rollbacks raise real alarms."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from common.broker.inprocess import InProcessBroker
from common.flows import load_flows
from common.store.sqlite.drains import SqliteModuleDrains
from common.engine.document import Task
from common.queues import module_queue
from common.runtime.module import ModuleRuntime
from common.engine.states import FINAL_STATUSES
from common.store.sqlite.tasks import SqliteStore
from modules.monitor.alarms import alarm_consumer
from oss.api import create_app
from oss.settings import load_oss_settings
from tests.support.cluster import STATE_DEADLINE
from tests.support.served import served as _served

# Step timeouts far away: the commands answer at once, and the one a test hangs it stops from
# the console, which on a loaded machine took longer than a short timeout (that then ended the
# step first).
FLOWS = """
version: 1
defaults: {timeout: 300, retry: 0, backoff: {initial: 0.05, max: 0.1, multiplier: 1, jitter: 0}}
lock_modes:
  backup: {backup: true, resize: true}
  resize: {backup: true, resize: false}
task_types:
  provision_db:
    description: Announce, reserve capacity, create a database, charge the capacity.
    parameters:
      name: {type: string, required: true, pattern: "^[a-z][a-z0-9_]{0,31}$"}
      admin_password: {type: string, secret: true, min_length: 12}
    steps:
      - name: announce
        normal:   {module: resource, command: noop}
      - name: reserve
        normal:   {module: resource, command: check_resource}
        rollback: {module: resource, command: restore_resource}
      - name: create
        normal:   {module: mysql, command: init_instance, retry: 1}
        rollback: {module: mysql, command: clean_instance}
      - name: charge
        normal:   {module: resource, command: deduct_resource}
        rollback: {module: resource, command: restore_resource}
  fan_out:
    description: A diamond around a for_each step, then a sub-flow.
    parameters:
      nodes: {type: array, required: true}
    steps:
      - name: prepare
        normal:   {module: resource, command: step_a}
        rollback: {module: resource, command: undo_a}
      - name: per_node
        after: [prepare]
        for_each: nodes
        max_parallel: 2
        normal:   {module: mysql, command: step_item}
        rollback: {module: mysql, command: undo_item}
      - name: side
        after: [prepare]
        normal:   {module: resource, command: step_b}
        rollback: {module: resource, command: undo_b}
      - name: join
        after: [per_node, side]
        normal:   {module: mysql, command: step_d}
        rollback: {module: mysql, command: undo_d}
      - name: nested
        flow: leaf
  fleet:
    description: A child task per node (a for_each sub-flow step).
    parameters:
      nodes: {type: array, required: true}
    steps:
      - name: per_node
        for_each: nodes
        flow: leaf
  patch_rollout:
    description: A fleet patch with a failure budget that holds past it (test_browser_rollout.py).
    parameters:
      nodes: {type: array, required: true}
    steps:
      - name: patch
        for_each: nodes
        max_parallel: 2
        tolerate: {count: 1}
        on_failure: hold
        normal:   {module: mysql, command: step_item}
        rollback: {module: mysql, command: undo_item}
  patch_waves:
    description: A fleet patch in waves, a canary paused for continue first (test_browser_waves.py).
    parameters:
      nodes: {type: array, required: true}
    steps:
      - name: patch
        for_each: nodes
        max_parallel: 2
        waves: [{size: 1, pause: true}, rest]
        normal:   {module: mysql, command: step_item}
        rollback: {module: mysql, command: undo_item}
  replica_rollout:
    description: Sub-flow steps with long names (the graph fits them in their boxes).
    parameters:
      nodes: {type: array, required: true}
    steps:
      - name: provision_every_replica_member
        flow: replica_member_provisioning
      - name: per_replica_member
        for_each: nodes
        flow: replica_member_provisioning
  replica_member_provisioning:
    steps:
      - name: leaf
        normal:   {module: mysql, command: step_leaf}
        rollback: {module: mysql, command: undo_leaf}
  leaf:
    steps:
      - name: leaf
        normal:   {module: mysql, command: step_leaf}
        rollback: {module: mysql, command: undo_leaf}
  await_replica:
    description: A step that is never done; it checks again until cancelled.
    steps:
      - name: caught_up
        max_wait: 600
        normal:   {module: mysql, command: await_caught_up}
        rollback: {module: mysql, command: undo_leaf}
  rated_db:
    description: One start per database name an hour (test_browser_rates.py).
    rate: {key: "db:{name}", limit: 1, per: 1h}
    parameters:
      name: {type: string, required: true}
    steps:
      - name: create
        normal:   {module: mysql, command: init_instance}
        rollback: {module: mysql, command: clean_instance}
  locked_db:
    description: One task per database name at a time (test_browser_locks.py).
    lock: {key: "db:{name}"}
    parameters:
      name: {type: string, required: true}
    steps:
      - name: create
        normal:   {module: mysql, command: init_instance}
        rollback: {module: mysql, command: clean_instance}
      - name: charge
        normal:   {module: resource, command: deduct_resource}
        rollback: {module: resource, command: restore_resource}
  backup_db:
    description: Backs up a database; backups and a resize share it (test_browser_locks.py).
    lock: {key: "inst:{name}", mode: backup, limit: 5}
    parameters:
      name: {type: string, required: true}
    steps:
      - name: dump
        normal:   {module: mysql, command: init_instance}
  watch_db:
    description: Watches a database until cancelled, holding its step's lock (test_browser_locks.py).
    parameters:
      name: {type: string, required: true}
    steps:
      - name: caught_up
        lock: {key: "watch:{name}", mode: resize}
        normal:   {module: mysql, command: await_caught_up}
  resize_db:
    description: Resizes a database, one resize at a time (test_browser_locks.py).
    lock: {key: "inst:{name}", mode: resize, limit: 5}
    parameters:
      name: {type: string, required: true}
    steps:
      - name: create
        normal:   {module: mysql, command: init_instance}
        rollback: {module: mysql, command: clean_instance}
      - name: charge
        normal:   {module: resource, command: deduct_resource}
        rollback: {module: resource, command: restore_resource}
  records_fleet:
    description: Two for_each steps kept in records; the first declares no rollback (test_browser_items.py).
    parameters:
      zones: {type: array, required: true}
      nodes: {type: array, required: true}
    steps:
      - name: per_zone
        for_each: zones
        max_parallel: 2
        normal:   {module: resource, command: step_a}
      - name: per_node
        for_each: nodes
        max_parallel: 2
        normal:   {module: mysql, command: step_item}
        rollback: {module: mysql, command: undo_item}
  frozen_db:
    description: Held by a freeze window that is always open (test_browser_freeze.py).
    steps:
      - name: create
        normal:   {module: mysql, command: init_instance}
        rollback: {module: mysql, command: clean_instance}
  approved_db:
    description: Waits for an operator's approval before it creates the database (test_browser_approvals.py).
    steps:
      - name: reserve
        normal:   {module: resource, command: check_resource}
        rollback: {module: resource, command: restore_resource}
      - name: ask
        approve: {count: 1, roles: [operator]}
      - name: create
        normal:   {module: mysql, command: init_instance}
        rollback: {module: mysql, command: clean_instance}
freeze:
  # A daily window a day long (UTC): one opens as the last closes, open at every moment.
  - {name: maintenance, cron: "0 0 * * *", duration: 24h, task_types: [frozen_db], policy: wait}
"""
OPERATOR = "console-operator-token-0123"
READER = "console-reader-token-01234"
SHOP = "console-shop-token-0123456"  # limited to the tasks labelled team=shop (docs/guide/access.md)
TOKENS = json.dumps([
    {"name": "olga", "token": OPERATOR, "role": "operator"},
    {"name": "rita", "token": READER, "role": "read"},
    {"name": "shop", "token": SHOP, "namespaces": [{"name": "shop", "labels": {"team": "shop"}, "role": "operator"}]},
])
REGISTRIES = {
    "resource": "tests.support.standin_commands:resource",
    "mysql": "tests.support.standin_commands:mysql",
}
# Faults that make step 3 (charge) fail: its rollback and the earlier ones then run.
FAIL_CHARGE = [{"command": "deduct_resource", "action": "fail"}]
FAIL_CLEAN = [{"command": "clean_instance", "phase": "rollback", "action": "fail"}]
# Step 2 (create) fails its first attempt only: its retry succeeds.
FLAKY_CREATE = [{"command": "init_instance", "action": "fail", "times": 1}]


@dataclass
class LiveConsole:
    url: str
    store: SqliteStore
    api: httpx.Client  # to the served app, as the operator

    def submit(self, task_type: str = "provision_db", start_at: float | None = None, **parameters: Any) -> str:
        body = {"task_type": task_type, "parameters": parameters, "start_at": start_at,
                "user_id": "dana", "labels": {"team": "payments", "env": "staging"}}  # fmt: skip
        response = self.api.post("/api/v1/tasks", json=body)
        assert response.status_code == 201, response.text
        return response.json()["task_id"]

    def act(self, task_id: str, action: str, reason: str) -> httpx.Response:
        return self.api.post(f"/api/v1/tasks/{task_id}/{action}", json={"reason": reason})

    def held(self, task_id: str, module: str = "mysql") -> bool:
        """A run of the task is held by `module`'s drain."""
        task = self.store.get(task_id)
        return task is not None and any(r.HeldBy == module for r in task.Runs)

    def wait_final(self, task_id: str, timeout: float = 15) -> Task:
        """`timeout`: what the task takes on a quiet machine; the wait goes on to STATE_DEADLINE
        at least (tests.support.cluster.wait_until says why)."""
        timeout = max(timeout, STATE_DEADLINE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            task = self.store.get(task_id)
            if (
                task
                and task.TaskStatus in FINAL_STATUSES
                and not task.Runs
                and not task.Outbox
            ):
                return task
            time.sleep(0.05)
        raise AssertionError(
            f"task {task_id} not final after {timeout}s: {self.store.get(task_id)}"
        )


@contextlib.contextmanager
def live_console(workdir: Path) -> Iterator[LiveConsole]:
    """Everything started here is stopped on the way out, last started first."""
    flows_path = workdir / "flows.yaml"
    flows_path.write_text(FLOWS)
    db = workdir / "console.db"
    # The default lease, renewed about as often as a 5 s one was: the served OSS, both modules and
    # the sweeper share this process, and on a loaded machine the commit of one item of a task
    # with 100 inline items waited up to 4 s for its turn on the document, past what a 5 s lease
    # left it (the sweeper then took the live module for lost and a `retry: 0` step failed). No
    # test here waits for a lease to lapse: nothing kills a module.
    settings = load_oss_settings(
        store_url=f"sqlite:///{db}", broker_url="memory://", flows_path=str(flows_path),
        api_tokens=TOKENS, fault_injection=True, concurrency=2, sweep_interval_seconds=0.3,
        relay_grace_seconds=1, lease_seconds=30, heartbeat_seconds=2, shutdown_grace_seconds=2,
    )  # fmt: skip
    flows = load_flows(flows_path)
    with contextlib.ExitStack() as stack:
        store = SqliteStore(db)
        stack.callback(store.close)
        broker = InProcessBroker()
        stack.callback(broker.close)
        queues = {module_queue(m) for m in flows.modules()}
        for module, registry in REGISTRIES.items():
            extra = alarm_consumer(settings, store) if module == "mysql" else None
            runtime = ModuleRuntime(registry_ref=registry, settings=settings, store=store, broker=broker,
                                    queues_to_declare=queues, extra_consumers=extra,
                                    drains=SqliteModuleDrains(db))  # fmt: skip
            runtime.start()
            stack.callback(runtime.stop, grace=2)
        url = stack.enter_context(
            _served(create_app(settings, store=store, broker=broker, flows=flows))
        )
        api = stack.enter_context(
            # A request's bound is a hang guard, not a speed: the served app shares this process
            # with the modules' runtimes, all slow on a loaded machine.
            httpx.Client(base_url=url, headers={"Authorization": f"Bearer {OPERATOR}"}, timeout=STATE_DEADLINE)
        )
        yield LiveConsole(url, store, api)
