"""Rate limits are exact across processes (docs/design/rates.md, "Why exact"): two OSS processes
serving REST, four replicas of a module, a sweeper and the `baton` CLI, all on one store, submit
and start tasks of a type with `rate: {key: "host:{host}", limit: L, per: P}` on two keys at once;
one OSS is killed with SIGKILL while tasks wait (their timers die with it: the sweeper's relay
takes over).

What must hold, read from the task histories: every task succeeds and started once (one
`rate_taken`, one first dispatch); per key, no window of P seconds holds more than L starts; the
limit was binding (tasks waited); and slots were taken by more than one process. A second type's
step has a rate of its own: its attempts, whose slots the module replicas take as the step before
it ends, go out no more than L per window either. Reduced in `make
test`, bigger under `make chaos`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections import Counter

import pytest

from common.engine.document import Task
from common.engine.states import TaskStatus
from tests.chaos.plans import scale
from tests.deploy.support import TOKENS, http
from tests.support.cluster import REPO, Cluster, wait_until
from tests.support.oss_deployment import answers
from tests.support.ports import free_port
from tests.support.test_store import cluster_mongo_url

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow, pytest.mark.chaos]
LIMIT, PER = scale(3, 5), 2.0
PER_KEY = scale(12, 50)  # tasks per key, over REST (both OSS) and the CLI
KEYS = ("a", "b")
FLOWS = f"""
version: 1
defaults:
  timeout: 10
  retry: 2
  backoff: {{initial: 0.1, max: 0.4, multiplier: 2, jitter: 0.1}}
task_types:
  create_db:
    rate: {{key: "host:{{host}}", limit: {LIMIT}, per: {PER:g}s}}
    parameters:
      host: {{type: string, required: true}}
      hold: {{type: number, default: 0.05}}
    steps:
      - name: create
        normal: {{module: resource, command: hold}}
  provision:
    parameters:
      host: {{type: string, required: true}}
      hold: {{type: number, default: 0.05}}
    steps:
      - name: reserve
        normal: {{module: resource, command: hold}}
      - name: call
        rate: {{key: "api:{{host}}", limit: {LIMIT}, per: {PER:g}s}}
        normal: {{module: resource, command: hold}}
"""


def starts(task: Task) -> list[float]:
    return [e.Time for e in task.History if e.Event == "rate_taken"]


def densest_window(times: list[float], per: float) -> int:
    """The most start times in any half-open window of `per` seconds."""
    times = sorted(times)
    return max((sum(1 for t in times[i:] if t < s + per) for i, s in enumerate(times)), default=0)


def test_starts_per_key_never_exceed_the_limit_in_any_window_across_processes(rabbitmq_url, tmp_path, request):
    cluster = Cluster(tmp_path, rabbitmq_url, FLOWS, mongo_url=cluster_mongo_url(request),
                      extra_env={"BATON_API_TOKENS": TOKENS, "BATON_OSS_SWEEPER": "false"})
    ports = [free_port(), free_port()]
    try:
        with cluster.starting():  # side by side
            for n in range(4):
                cluster.start_module("resource", f"resource-{n}", registry="tests.support.standin_commands:resource")
            cluster.start_sweeper()
            for name, port in zip(("oss-a", "oss-b"), ports):
                cluster.start_oss(port, name)
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        for base in bases:
            wait_until(lambda base=base: answers(f"{base}/readyz"), 60, f"{base} ready")

        ids: list[str] = []
        lock = threading.Lock()

        def submit_over_rest(base: str, count: int, first: int) -> None:
            for n in range(first, first + count):
                status, body = http("POST", f"{base}/api/v1/tasks",
                                    {"task_type": "create_db", "parameters": {"host": KEYS[n % len(KEYS)]}})
                assert status == 201, body
                with lock:
                    ids.append(body["task_id"])

        provisions = [http("POST", f"{bases[n % 2]}/api/v1/tasks",
                           {"task_type": "provision", "parameters": {"host": "shared"}})[1]["task_id"]
                      for n in range(PER_KEY)]  # a step's rate: the module replicas take its slots
        by_cli = len(KEYS)  # the CLI is a process taking slots too
        over_rest = PER_KEY * len(KEYS) - by_cli
        threads = [threading.Thread(target=submit_over_rest, args=(base, over_rest // 2, n))  # each key PER_KEY in all
                   for n, base in enumerate(bases)]
        for thread in threads:
            thread.start()
        for n in range(by_cli):
            done = subprocess.run([sys.executable, "-m", "oss", "submit", "create_db", f"host={KEYS[n % len(KEYS)]}",
                                   "--json"], cwd=REPO, env=cluster.env, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            ids.append(json.loads(done.stdout)["TaskId"])
        for thread in threads:
            thread.join(timeout=120)
        assert len(ids) == PER_KEY * len(KEYS)

        cluster.kill("oss-a", signal.SIGKILL)  # its timers for the waiting tasks die with it
        tasks = [cluster.wait_final(task_id, timeout=PER_KEY / LIMIT * PER + 90) for task_id in ids]

        assert [t.TaskStatus for t in tasks] == [TaskStatus.SUCCESS] * len(ids), [t.TaskMessage for t in tasks]
        assert all(len(starts(t)) == 1 and t.Rate.Since == starts(t)[0] for t in tasks)
        first_dispatches = Counter(t.TaskId for t in tasks for e in t.History
                                   if e.Event == "dispatched" and e.Cursor == 0 and e.Attempt == 1)
        assert set(first_dispatches.values()) == {1}, "a task was started twice"
        for key in KEYS:
            times = [starts(t)[0] for t in tasks if t.Parameters["host"] == key]
            assert len(times) == PER_KEY
            assert densest_window(times, PER) <= LIMIT, sorted(times)
            assert max(times) - min(times) >= (PER_KEY // LIMIT - 1) * PER  # the limit was binding
        assert any(e.Event == "rate_waiting" for t in tasks for e in t.History)
        provisioned = [cluster.wait_final(task_id, timeout=PER_KEY / LIMIT * PER + 90) for task_id in provisions]
        assert [t.TaskStatus for t in provisioned] == [TaskStatus.SUCCESS] * PER_KEY
        calls = [e.Time for t in provisioned for e in t.History if e.Event == "rate_taken" and e.Cursor == 1]
        for t in provisioned:  # one slot per attempt of the rated step (a retry takes one more)
            attempts = [e.Attempt for e in t.History if e.Event == "dispatched" and e.Cursor == 1]
            taken = [e.Attempt for e in t.History if e.Event == "rate_taken" and e.Cursor == 1]
            assert taken == attempts, [(e.Event, e.Cursor, e.Attempt, e.Message) for e in t.History]
        assert len(calls) >= PER_KEY and densest_window(calls, PER) <= LIMIT, sorted(calls)
        callers = {name for name in cluster.procs if name.startswith("resource")
                   and any(e.get("event") == "step rate asked" for e in cluster.log_events(name))}
        assert len(callers) >= 2, callers  # the replicas raced for the step's slots
        takers = {name for name in cluster.procs
                  if any(e.get("event") == "rate slot taken" for e in cluster.log_events(name))}
        assert len(takers) >= 2, takers  # two OSS, the CLI's (not logged here) or the sweeper
        densest = {key: densest_window([starts(t)[0] for t in tasks if t.Parameters["host"] == key], PER) for key in KEYS}
        print(f"\nRATE {len(ids)} tasks, {LIMIT} per {PER:g}s, densest window per key {densest}, "
              f"slots taken by {sorted(takers)}")
    except AssertionError:
        print(cluster.logs())
        raise
    finally:
        cluster.stop_all()
