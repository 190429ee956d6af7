"""A rolling upgrade: modules and the sweeper of the previous release run tasks that the current
OSS code submits, and are replaced one at a time by the current release while tasks are in
flight. Every task must end successful with each step committed exactly once: the two releases
read each other's task documents, step messages and store tables the whole time.

The previous release is the commit tests/contract/previous_release/ names, taken from this
checkout's git history (`git archive`).
"""

from __future__ import annotations

import json
import signal
import subprocess
import tarfile
import io
from pathlib import Path

import pytest

from common.engine.states import FINAL_STATUSES, TaskStatus
from tests.support.cluster import REPO, Cluster, commits, wait_until

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
PREVIOUS = json.loads((REPO / "tests/contract/previous_release/documents.schema.json").read_text())["release"]
# Each command takes a moment, so that every replacement finds work in flight. Only what both
# releases' module SDK offers (common.runtime.registry).
COMMANDS = '''
import time
from common.runtime.registry import CommandContext, CommandRegistry

first, second = CommandRegistry("first"), CommandRegistry("second")


@first.command()
@second.command()
def work(ctx: CommandContext) -> dict:
    time.sleep(0.15)
    return {f"done_{ctx.cursor}": ctx.attempt}


@first.command()
@second.command()
def undo(ctx: CommandContext) -> dict:
    return {}
'''
FLOWS = """
version: 1
defaults: {timeout: 20, retry: 3, backoff: {initial: 0.1, max: 0.5, multiplier: 2, jitter: 0.1}}
task_types:
  upgrade_me:
    steps:
""" + "".join(f"""      - name: step_{n}
        normal:   {{module: {module}, command: work}}
        rollback: {{module: {module}, command: undo}}
""" for n, module in enumerate(["first", "second", "first", "second"]))


def in_flight(cluster: Cluster, task_ids: list[str]) -> None:
    """Wait until a task that has not ended has had a step claimed: work is moving. Should every
    task have ended first (a process's restart outlasted them), more are submitted (to `task_ids`)."""
    def moving() -> bool:
        tasks = [cluster.store.get(task_id) for task_id in task_ids]
        if all(t.TaskStatus in FINAL_STATUSES for t in tasks):
            task_ids.extend(cluster.submit("upgrade_me", n=n).TaskId for n in range(6))
            return False
        return any(t.TaskStatus not in FINAL_STATUSES and any(e.Event == "claimed" for e in t.History) for t in tasks)

    try:
        wait_until(moving, 120, "a task in flight with a step claimed")
    except AssertionError:
        print(cluster.logs())  # a release that cannot read what the other wrote says so in its log
        raise


@pytest.fixture(scope="module")
def previous_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True, text=True)
    if shallow.stdout.strip() == "true":
        pytest.skip(f"a shallow clone has no previous release ({PREVIOUS}); `git fetch --unshallow` brings it")
    archive = subprocess.run(["git", "archive", "--format=tar", PREVIOUS, "common", "modules", "oss", "tests/support",
                              "tests/__init__.py"], cwd=REPO, capture_output=True, check=True)  # fmt: skip
    tree = tmp_path_factory.mktemp("previous-release")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")
    return tree


@pytest.fixture
def cluster(rabbitmq_url: str, tmp_path: Path) -> Cluster:
    (tmp_path / "commands").mkdir()
    (tmp_path / "commands" / "upgrade_commands.py").write_text(COMMANDS)
    cluster = Cluster(tmp_path, rabbitmq_url, FLOWS, extra_env={"PYTHONPATH": str(tmp_path / "commands")})
    yield cluster
    cluster.stop_all()


def test_tasks_in_flight_survive_replacing_each_process_by_the_next_release(cluster: Cluster, previous_release: Path):
    def start(name: str, checkout: Path) -> None:
        if name == "sweeper":
            cluster.start_sweeper(checkout=checkout, PYTHONPATH=cluster.env["PYTHONPATH"])
        else:
            module = name.rstrip("0123456789")
            cluster.start_module(module, name=name, registry=f"upgrade_commands:{module}", checkout=checkout,
                                 PYTHONPATH=cluster.env["PYTHONPATH"])  # fmt: skip

    names = ["first1", "first2", "second1", "second2", "sweeper"]
    with cluster.starting():
        for name in names:
            start(name, previous_release)
    submitted = [cluster.submit("upgrade_me", n=n).TaskId for n in range(12)]
    for name in names:  # one at a time, each with tasks in flight, as a rollout replaces pods
        in_flight(cluster, submitted)
        cluster.kill(name, signal.SIGTERM)
        start(name, REPO)
        submitted += [cluster.submit("upgrade_me", n=n).TaskId for n in range(6)]

    for task_id in submitted:
        task = cluster.wait_final(task_id, 180)
        assert task.TaskStatus is TaskStatus.SUCCESS, task.TaskMessage
        assert set(commits(task).values()) == {1}, commits(task)
        assert sorted(k for k in task.Parameters if k.startswith("done_")) == [f"done_{n}" for n in range(4)]
    for name in names:  # neither release choked on what the other wrote
        refused = [e for e in cluster.log_events(name) if e.get("level") in ("error", "critical")]
        assert refused == [], refused[:3]
