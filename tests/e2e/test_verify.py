"""An unknown outcome is verified before a retry or a rollback (docs/design/runtime.md, "Verifying
an unknown outcome"), with real module processes killed with SIGKILL on the real RabbitMQ, the real
mysql module on the real MariaDB, and the worked example of docs/guide/modules.md
(tests/support/verify_commands.py runs the page's code as the `billing` module).

- mysql's init_instance killed after it created the instance: the retry's verify finds it done,
  the command does not run again; killed while it waits for the instance's lock (mid-command):
  the verify finds nothing and the command runs. Either way MariaDB holds one database and one
  ownership row for the task.
- The docs' charge: killed after charging, the retry finds the charge (one ledger entry); killed
  before charging with no retry left, the rollback's verify finds nothing to refund.
- A verify that never can tell: the step ends outcome unknown, its rollback too, the task ends
  ROLLBACK_FAILED with exactly one alarm; the REST API and the CLI show every verdict.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from common.engine.states import Phase, ResultCode, StepState, TaskStatus
from common.flows import load_flows
from modules.mysql.server import Server
from oss.api import create_app
from oss.settings import load_oss_settings
from tests.api.support import READER, TOKENS, auth
from tests.support.cluster import REPO, STATE_DEADLINE, Cluster, wait_until
from tests.support.mariadb import Sandbox, connect, mariadb_sandbox
from tests.support.process_tree import descendants

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
SECRET = "hunter2-verify-secret"
FLOWS = """
version: 1
defaults:
  timeout: 10
  retry: 0
  backoff: {initial: 0.1, max: 0.2, multiplier: 2, jitter: 0}
task_types:
  make_db:
    parameters:
      name: {type: string, required: true}
    steps:
      - name: init_instance
        normal:   {module: mysql, command: init_instance, timeout: 30, retry: 2}
        rollback: {module: mysql, command: clean_instance, timeout: 30, retry: 1}
  pay:
    parameters:
      ledger: {type: string, required: true}
      amount: {type: integer, default: 5}
    steps:
      - name: charge
        normal:   {module: billing, command: charge, retry: 2}
        rollback: {module: billing, command: refund}
  pay_once:
    parameters:
      ledger: {type: string, required: true}
      amount: {type: integer, default: 5}
    steps:
      - name: charge
        normal:   {module: billing, command: charge}
        rollback: {module: billing, command: refund}
  unsure_one:
    parameters:
      token: {type: string, secret: true}
    steps:
      - name: make
        normal:   {module: unsure, command: make, timeout: 1, retry: 2}
        rollback: {module: unsure, command: unmake}
"""


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with mariadb_sandbox() as box:
        yield box


@pytest.fixture(scope="module")
def cluster(rabbitmq_url, sandbox, tmp_path_factory) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path_factory.mktemp("verify"), rabbitmq_url, FLOWS, extra_env=sandbox.env())
    try:
        with cluster.starting():
            cluster.start_module("mysql")
            cluster.start_module("billing", registry="tests.support.verify_commands:billing")
            cluster.start_module("unsure", registry="tests.support.verify_commands:unsure")
            cluster.start_module("monitor")
            cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()


def restart_after_crash(cluster: Cluster, name: str) -> None:
    proc = cluster.procs[name]
    wait_until(lambda: proc.popen.poll() is not None, 60, f"{name} killed by its injected crash")
    cluster.restart(name)


def verdicts(task, phase: Phase = Phase.NORMAL) -> list[str]:
    return [e.Message for e in task.History if e.Event == "verified" and e.Phase is phase]


def test_init_instance_killed_after_its_work_is_verified_done_and_not_run_again(cluster, sandbox):
    name = sandbox.name("vdone")
    faults = [{"command": "init_instance", "action": "crash", "at": "before_commit"}]
    task = cluster.submit("make_db", name=name, _baton_faults=faults)
    restart_after_crash(cluster, "mysql")
    done = cluster.wait_final(task.TaskId, timeout=90)

    assert done.TaskStatus is TaskStatus.SUCCESS, done.TaskMessage
    assert verdicts(done) == [f"done: instance {name} exists, created under this step's key"]
    step = done.Steps[0]
    assert step.Attempts == 2 and step.Message.startswith("verified done; not run again")
    assert sandbox.databases() == {name} and sandbox.owned() == {name}  # one of each: no duplicate
    # The verify's output is the command's: the credentials work.
    instance = done.Parameters["instance"]
    with contextlib.closing(connect(user=instance["user"], password=instance["password"], database=name)):
        pass
    logged = [e for e in cluster.log_events("mysql") if e.get("event") == "verified" and e.get("task_id") == task.TaskId]
    assert [(e["verdict"], e["step"], e["phase"], e["attempt"]) for e in logged] == [("done", 0, "normal", 2)]


def test_init_instance_killed_mid_command_is_verified_not_done_and_runs_once_more(cluster, sandbox):
    name = sandbox.name("vmid")
    faults = [{"command": "init_instance", "action": "crash", "at": "during_command"}]
    with contextlib.closing(connect()) as holder, holder.cursor() as cur:
        # The instance's lock, held here: init_instance waits for it, so the module's kill (0.2 s
        # into the command) surely lands in the middle of the command, before it created anything.
        lock = Server(holder, sandbox.meta_schema)._lock_name(name)
        cur.execute("SELECT GET_LOCK(%s, 5)", (lock,))
        children = descendants(cluster.procs["mysql"].popen.pid)  # its forkserver and command children
        task = cluster.submit("make_db", name=name, _baton_faults=faults)
        wait_until(lambda: cluster.procs["mysql"].popen.poll() is not None, 60, "mysql killed mid-command")
        # As when its host dies: its command's child too. (Left alone, the child outlives its
        # module by seconds, until its forkserver notices, and finishes the command itself; the
        # verify then finds it done, as in the test above.)
        for pid in children:
            with contextlib.suppress(OSError):  # gone already (checked: never a pid reused since)
                if b"multiprocessing" in open(f"/proc/{pid}/cmdline", "rb").read():  # noqa: SIM115
                    os.kill(pid, signal.SIGKILL)
        cur.execute("SELECT RELEASE_LOCK(%s)", (lock,))
    cluster.restart("mysql")
    done = cluster.wait_final(task.TaskId, timeout=90)

    assert done.TaskStatus is TaskStatus.SUCCESS, done.TaskMessage
    assert verdicts(done) == [f"not_done: no instance {name} created under this step's key"]
    assert done.Steps[0].Attempts == 2 and done.Steps[0].Code is ResultCode.OK
    others = {sandbox.name("vdone")}  # the other test's, when it ran first
    assert sandbox.databases() - others == {name} and sandbox.owned() - others == {name}


def ledger_rows(path) -> list[tuple[str, int]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT key, amount FROM entries").fetchall()


def test_the_docs_charge_killed_after_charging_is_not_charged_twice(cluster, tmp_path):
    ledger = str(tmp_path / "ledger.db")
    faults = [{"command": "charge", "action": "crash", "at": "before_commit"}]
    task = cluster.submit("pay", ledger=ledger, amount=7, _baton_faults=faults)
    restart_after_crash(cluster, "billing")
    done = cluster.wait_final(task.TaskId, timeout=60)
    assert done.TaskStatus is TaskStatus.SUCCESS and done.Parameters["charged"] == 7, done.TaskMessage
    assert verdicts(done) == ["done: charged under this step's key"]
    assert ledger_rows(ledger) == [(f"{task.TaskId}:0:normal", 7)]  # one charge, not two


def test_the_docs_refund_is_not_paid_for_a_charge_that_never_happened(cluster, tmp_path):
    ledger = str(tmp_path / "ledger.db")
    faults = [{"command": "charge", "action": "crash", "at": "after_claim"}]  # before any charge
    task = cluster.submit("pay_once", ledger=ledger, _baton_faults=faults)
    restart_after_crash(cluster, "billing")
    done = cluster.wait_final(task.TaskId, timeout=60)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK, done.TaskMessage
    step = done.Steps[0]
    assert step.Code is ResultCode.WORKER_LOST and step.State is StepState.ROLLED_BACK
    assert verdicts(done, Phase.ROLLBACK) == ["not_done: no entry under this step's key"]
    assert step.RollbackMessage.startswith("verified not done; nothing to roll back")
    assert not (tmp_path / "ledger.db").exists() or ledger_rows(ledger) == []  # no refund either


def test_an_outcome_that_stays_unknown_ends_rollback_failed_with_one_alarm_shown_by_api_and_cli(cluster):
    faults = [{"command": "make", "action": "hang", "times": 1}]  # attempt 1 runs into its timeout
    task = cluster.submit("unsure_one", token=SECRET, _baton_faults=faults)
    done = cluster.wait_final(task.TaskId, timeout=90)
    # The verify's reason quoted the secret: masked in the document and the module's log.
    assert SECRET not in done.model_dump_json(exclude={"Parameters", "SubmittedParameters"}) and SECRET not in cluster.procs["unsure"].log_text()

    assert done.TaskStatus is TaskStatus.ROLLBACK_FAILED, done.TaskMessage
    step = done.Steps[0]
    assert (step.Code, step.RollbackCode) == (ResultCode.OUTCOME_UNKNOWN, ResultCode.OUTCOME_UNKNOWN)
    assert (step.Verifies, step.RollbackVerifies, step.Attempts, step.RollbackAttempts) == (3, 3, 2, 1)
    unknown = "unknown: the far side does not answer to ***"
    assert verdicts(done) == [unknown] * 3 and verdicts(done, Phase.ROLLBACK) == [unknown] * 3
    assert "outcome still unknown after 3 verifies" in done.TaskMessage

    wait_until(lambda: any(a.TaskId == task.TaskId for a in cluster.store.list_alarms(limit=1000)), 20, "alarm")
    time.sleep(1.0)  # a second alarm, were there one, would be on its way by now
    alarms = [a for a in cluster.store.list_alarms(limit=1000) if a.TaskId == task.TaskId]
    assert len(alarms) == 1 and alarms[0].Kind == "rollback_failed"
    assert "outcome still unknown" in alarms[0].Message

    settings = load_oss_settings(store_url=cluster.store_url, flows_path=str(cluster.flows_path), api_tokens=TOKENS,
                                 oss_sweeper=False)
    app = create_app(settings, store=cluster.store, broker=cluster.broker, flows=load_flows(cluster.flows_path))
    with TestClient(app) as client:
        shown = client.get(f"/api/v1/tasks/{task.TaskId}", headers=auth(READER)).json()
    api_verdicts = [(e["Phase"], e["Message"]) for e in shown["History"] if e["Event"] == "verified"]
    assert api_verdicts == [(0, unknown)] * 3 + [(1, unknown)] * 3
    assert (shown["Steps"][0]["Code"], shown["Steps"][0]["RollbackVerifies"]) == (5, 3)

    cli = subprocess.run([sys.executable, "-m", "oss", "get", task.TaskId, "--json"], env=cluster.env, cwd=REPO,
                         capture_output=True, text=True, timeout=STATE_DEADLINE)
    assert cli.returncode == 0, cli.stderr
    history = json.loads(cli.stdout)["History"]
    assert [e["Message"] for e in history if e["Event"] == "verified"] == [unknown] * 6
    watched = subprocess.run([sys.executable, "-m", "oss", "watch", task.TaskId], env=cluster.env, cwd=REPO,
                             capture_output=True, text=True, timeout=STATE_DEADLINE)
    assert f"verified step 0 make (rollback, attempt 1): {unknown}" in watched.stdout, watched.stdout + watched.stderr
    assert watched.stdout.count(f"verified step 0 make (normal, attempt 2): {unknown}") == 3
