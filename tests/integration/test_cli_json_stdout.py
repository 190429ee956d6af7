"""Every `--json` answer is JSON alone on stdout, whatever the command logs: its log lines (debug
here, the most there are) go to stderr. Each command runs as the `baton` a script would run, a
process of its own, on a SQLite store and the in-process broker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import REPO, STATE_DEADLINE


def _documents(text: str) -> list[Any]:
    """Every JSON document of `text`, in order; anything else between them fails."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        value, at = decoder.raw_decode(text, at)
        found.append(value)
    return found


@pytest.fixture(scope="module")
def baton(tmp_path_factory):
    work: Path = tmp_path_factory.mktemp("json")
    env = {**os.environ, "BATON_STORE_URL": f"sqlite:///{work / 'baton.db'}", "BATON_BROKER_URL": "memory://",
           "BATON_FLOWS_PATH": str(REPO / "flows.yaml"), "BATON_LOG_LEVEL": "debug"}  # fmt: skip

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "oss", *argv], env=env, cwd=REPO, capture_output=True,
                              text=True, timeout=STATE_DEADLINE)  # fmt: skip

    return run


def test_every_json_answer_is_json_alone_on_stdout_with_the_logs_on_stderr(baton) -> None:
    submitted = baton("submit", "demo", "--json")
    assert submitted.returncode == 0, submitted.stderr
    [task] = _documents(submitted.stdout)
    assert "task created" in submitted.stderr  # the command logged, and not on stdout
    task_id = task["TaskId"]
    commands = [
        ["get", task_id, "--json"],
        ["list", "--json"],
        ["bulk", "pause", "--type", "demo", "--reason", "checking", "--json"],
        ["cancel", task_id, "--reason", "checking", "--json"],
        ["hosts", "add", "db-1", "--cpu", "4", "--memory-mb", "1024", "--storage-gb", "10", "--json"],
        ["hosts", "list", "--json"],
        ["hosts", "drain", "db-1", "--json"],
        ["hosts", "activate", "db-1", "--json"],
        ["locks", "--json"],
        ["modules", "--json"],
        ["schedules", "add", "nightly", "demo", "--every", "3600", "--json"],
        ["schedules", "list", "--json"],
        ["schedules", "show", "nightly", "--json"],
        ["schedules", "pause", "nightly", "--json"],
        ["schedules", "resume", "nightly", "--json"],
        ["flows", "versions", "--json"],
    ]
    for argv in commands:
        done = baton(*argv)
        assert done.returncode == 0, (argv, done.stderr)
        assert len(_documents(done.stdout)) == 1, (argv, done.stdout)
    watched = baton("watch", task_id, "--json")  # one object per event, then the task
    documents = _documents(watched.stdout)
    assert documents and documents[-1]["TaskId"] == task_id, watched.stdout
