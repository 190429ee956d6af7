"""A rolling upgrade: the previous release's OSS, sweeper and modules (tests/support/previous_release.py,
taken from this checkout's git history) run tasks, and are replaced one at a time by the current
release while tasks are in flight, one of them with SIGKILL; then replicas of the previous release
consume the same queues beside the current ones. The previous release's OSS serves beside the
current one throughout, and tasks are submitted through both.

The flow is a step on `first`, a for_each on `second`, a step on `first`, a step on `second`
(tests/support/upgrade_commands.py); some tasks fail for good at their third or fourth step and
roll back. Every task must end as planned, every unit committed at most once, and the modules'
ledger must agree with the documents (ledger_checks.py: every effect of a successful task made
and committed once, every effect of a rolled-back one undone once). While `first` runs only the
current release and `second` only the previous one, a step of each must follow a step of the
other: each release claims documents the other wrote. Both OSS read every task at the end.

Reduced in the normal run; BATON_CHAOS=full (make chaos) runs bigger waves over more items.
"""

from __future__ import annotations

import re
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from common.engine.states import TaskStatus
from tests.chaos.ledger_checks import check_ledger
from tests.chaos.plans import scale
from tests.deploy.support import TOKENS, http
from tests.support import bytecode, previous_release
from tests.support.cluster import REPO, STATE_DEADLINE, Cluster, wait_until
from tests.support.ledger_file import read_ledger
from tests.support.ports import free_port
from tests.support.test_store import cluster_mongo_url

pytestmark = [pytest.mark.chaos, pytest.mark.rabbitmq, pytest.mark.slow]

WAVE, LATER_WAVE, HOSTS = scale(4, 20), scale(2, 8), scale(3, 8)
WORK_SECONDS = 0.3  # each command's work: long enough that a replacement finds some in flight
FLOWS = """
version: 1
defaults: {timeout: 30, retry: 5, backoff: {initial: 0.1, max: 0.5, multiplier: 2, jitter: 0.1}}
task_types:
  upgrade_me:
    parameters:
      hosts: {type: array, required: true}
      fail_at: {type: integer, default: -1}
      work_seconds: {type: number, default: 0}
      n: {type: integer, default: 0}
    steps:
      - name: prepare
        normal:   {module: first, command: apply}
        rollback: {module: first, command: undo, retry: 8}
      - name: each
        for_each: hosts
        max_parallel: 2
        normal:   {module: second, command: apply}
        rollback: {module: second, command: undo, retry: 8}
      - name: finish
        normal:   {module: first, command: apply}
        rollback: {module: first, command: undo, retry: 8}
      - name: notify
        normal:   {module: second, command: apply}
        rollback: {module: second, command: undo, retry: 8}
"""
OLD, NEW = "previous", "current"
OWNER_PID = re.compile(r":(\d+):[^:]*$")  # module@host:pid:suffix


def fail_at(n: int) -> int:
    """The step task n fails at for good (-1: none): one in four at `notify`, one in four at `finish`."""
    return {1: 3, 3: 2}.get(n % 4, -1)


class Upgrade:
    """The cluster, which release each process runs, and the tasks submitted with their plan."""

    def __init__(self, cluster: Cluster, tree: Path):
        self.cluster, self.tree = cluster, tree
        self.release_of: dict[int, str] = {}  # module process id -> release
        self.planned: dict[str, int] = {}  # task id -> the step it fails at
        self.bases: dict[str, str] = {}  # OSS name -> its base URL

    def start(self, name: str, release: str) -> None:
        checkout = self.tree if release == OLD else REPO
        if name == "sweeper":
            self.cluster.start_sweeper(checkout=checkout, PYTHONPATH=self.cluster.env["PYTHONPATH"])
        elif name.startswith("oss"):
            port = free_port()
            self.cluster.start_oss(port, name=name, checkout=checkout, PYTHONPATH=self.cluster.env["PYTHONPATH"])
            self.bases[name] = f"http://127.0.0.1:{port}"
        else:
            module = name.rstrip("0123456789").removesuffix("_old")
            proc = self.cluster.start_module(module, name=name, registry=f"upgrade_commands:{module}", checkout=checkout,
                                             PYTHONPATH=self.cluster.env["PYTHONPATH"])  # fmt: skip
            self.release_of[proc.popen.pid] = release

    def submit(self, count: int) -> None:
        """`count` tasks, through each OSS in turn (each release's submission read by the other's modules)."""
        for n in range(count):
            base = list(self.bases.values())[n % len(self.bases)]
            parameters = {"hosts": [f"h{i}" for i in range(HOSTS)], "fail_at": fail_at(n), "work_seconds": WORK_SECONDS,
                          "n": n}  # fmt: skip
            status, created = http("POST", f"{base}/api/v1/tasks", {"task_type": "upgrade_me", "parameters": parameters},
                                   timeout=STATE_DEADLINE)  # fmt: skip
            assert status in (200, 201, 202), created
            self.planned[created["task_id"]] = fail_at(n)

    def ledger(self) -> list[dict]:
        return read_ledger(self.cluster.ledger)

    def release(self, line: dict) -> str:
        return self.release_of[int(OWNER_PID.search(line["owner"]).group(1))]

    def in_flight(self, name: str) -> bool:
        """A command of module process `name` begun and not ended (any command, for the others)."""
        pid = self.cluster.procs[name].popen.pid if name in self.cluster.procs and "sweeper" not in name else None
        counted: Counter[tuple] = Counter()
        for line in self.ledger():
            if pid is None or int(OWNER_PID.search(line["owner"]).group(1)) == pid:
                counted[line["key"], line["item"]] += 1 if line["op"] == "begun" else -1
        return any(count > 0 for count in counted.values())

    def errors(self) -> dict[str, list[dict]]:
        """The error lines each process logged: a release refusing what the other wrote says so there."""
        return {name: [e for e in self.cluster.log_events(name) if e.get("level") in ("error", "critical")]
                for name in self.cluster.procs}  # fmt: skip

    def wait(self, condition, what: str) -> None:
        """wait_until, failing with the processes' errors (why the releases did not get along)."""
        try:
            wait_until(condition, 120, what)
        except AssertionError as exc:
            errors = {name: [e.get("reason") or e.get("error") or e["event"] for e in lines[:3]]
                      for name, lines in self.errors().items() if lines}  # fmt: skip
            raise AssertionError(f"{exc}; errors logged: {errors}") from None

    def handovers(self) -> Counter[str]:
        """How often a step ran on one release right after the task's previous step ran on a
        release: "previous>current" is a current process claiming what a previous one committed."""
        by_task: dict[str, dict[int, list[tuple[float, str]]]] = {}
        for line in self.ledger():
            if line["op"] == "apply":
                by_task.setdefault(line["task"], {}).setdefault(line["cursor"], []).append((line["time"], self.release(line)))
        seen: Counter[str] = Counter()
        for cursors in by_task.values():
            for cursor in sorted(cursors):
                if cursor + 1 in cursors:
                    seen[f"{max(cursors[cursor])[1]}>{min(cursors[cursor + 1])[1]}"] += 1
        return seen


def answers_ready(base: str) -> bool:
    """/readyz says 200. No answer within its 5 s is "not yet", asked again: an OSS at load 40
    took longer, and the exception ended the whole test instead of the wait."""
    try:
        return http("GET", f"{base}/readyz", token=None, timeout=5)[0] == 200
    except OSError:  # urllib's time-out (URLError, TimeoutError) and a refused connection
        return False


@pytest.fixture(scope="module")
def previous_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = previous_release.missing_reason()
    if reason:
        pytest.skip(reason)
    tree = previous_release.materialise(tmp_path_factory.mktemp("previous-release"))
    bytecode.compile_checkout(tree)  # eight processes of it start: each would compile it again
    return tree


@pytest.fixture
def upgrade(rabbitmq_url: str, tmp_path: Path, previous_tree: Path, request: pytest.FixtureRequest) -> Upgrade:
    commands = tmp_path / "commands"
    commands.mkdir()
    for name in ("upgrade_commands", "ledger_file"):  # top-level: the same code for both releases
        (commands / f"{name}.py").write_text((REPO / f"tests/support/{name}.py").read_text())
    (tmp_path / "effects").mkdir()
    env = {"PYTHONPATH": str(commands), "BATON_TEST_LEDGER": str(tmp_path / "ledger.jsonl"),
           "BATON_TEST_EFFECTS": str(tmp_path / "effects"), "BATON_API_TOKENS": TOKENS, "BATON_OSS_SWEEPER": "false"}
    cluster = Cluster(tmp_path, rabbitmq_url, FLOWS, extra_env=env, mongo_url=cluster_mongo_url(request))
    cluster.ledger = tmp_path / "ledger.jsonl"
    try:
        yield Upgrade(cluster, previous_tree)
    finally:
        cluster.stop_all()


def test_tasks_in_flight_survive_a_rolling_upgrade_and_both_releases_side_by_side(upgrade: Upgrade):
    cluster, began = upgrade.cluster, time.monotonic()
    with cluster.starting():
        for name in ["oss_old", "sweeper", "first1", "first2", "second1", "second2"]:
            upgrade.start(name, OLD)
        upgrade.start("oss_new", NEW)
    for base in upgrade.bases.values():
        wait_until(lambda: answers_ready(base), 60, f"{base} ready")
    upgrade.submit(WAVE)
    # One at a time, each with a command of its own in flight, as a rollout replaces pods.
    for name, sig in [("first1", signal.SIGTERM), ("first2", signal.SIGKILL), ("second1", signal.SIGTERM),
                      ("second2", signal.SIGTERM), ("sweeper", signal.SIGTERM)]:  # fmt: skip
        upgrade.wait(lambda: upgrade.in_flight(name), f"a command in flight on {name}")
        cluster.kill(name, sig)
        upgrade.start(name, NEW)
        upgrade.submit(LATER_WAVE)
        if name == "first2":  # `first` all current, `second` all previous: each must take over from the other
            upgrade.submit(WAVE)
            upgrade.wait(lambda: {"current>previous", "previous>current"} <= set(upgrade.handovers()),
                         "steps handed over between the releases both ways")
    replaced = time.monotonic()
    with cluster.starting():  # the previous release beside the current one, on the same queues
        for name in ["first_old", "second_old"]:
            upgrade.start(name, OLD)
    upgrade.submit(WAVE)
    old_pids = {cluster.procs[name].popen.pid for name in ("first_old", "second_old")}
    upgrade.wait(lambda: old_pids <= {int(OWNER_PID.search(line["owner"]).group(1)) for line in upgrade.ledger()
                                      if line["op"] == "apply"}, "both previous replicas applied a step")  # fmt: skip

    tasks = [cluster.wait_final(task_id, 240) for task_id in upgrade.planned]
    ended = time.monotonic()
    for task in tasks:
        expected = TaskStatus.SUCCESS if upgrade.planned[task.TaskId] < 0 else TaskStatus.ROLLED_BACK
        assert task.TaskStatus is expected, (task.TaskId, task.TaskStatus, task.TaskMessage)
    report = check_ledger(tasks, [line for line in upgrade.ledger() if line["op"] in ("apply", "undo")])
    assert not report.violations, report.summary()
    for name, base in upgrade.bases.items():  # each release's OSS reads what every process wrote
        for task in tasks:
            status, answer = http("GET", f"{base}/api/v1/tasks/{task.TaskId}", timeout=STATE_DEADLINE)
            assert status == 200 and answer["TaskStatus"] == task.TaskStatus, (name, status, answer)
    refused = upgrade.errors()
    assert not any(refused.values()), {name: events[:3] for name, events in refused.items() if events}
    print(f"\nrolling upgrade from {previous_release.RELEASE}: {len(tasks)} tasks ({Counter(t.TaskStatus.name for t in tasks)}), "
          f"{report.units} units, {report.extra_applies} extra applies, {report.extra_undos} extra undos; "
          f"hand-overs {dict(upgrade.handovers())}; replaced in {replaced - began:.1f}s, "
          f"all ended {ended - began:.1f}s after the start")  # fmt: skip
