"""A step or item index on the command line has one spelling: `baton act`, `baton skip` and
`baton get --items` refuse "00" or "01" (exit 2, the value named) instead of reading step 0 or 1,
and change nothing. Real `baton` processes on a SQLite store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from common.store.sqlite.tasks import SqliteStore
from tests.integration.test_approvals_cli import FLOWS
from tests.support.cluster import REPO

pytestmark = pytest.mark.slow


def _baton(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    flows = tmp_path / "flows.yaml"
    flows.write_text(FLOWS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    env.update({"PYTHONPATH": str(REPO), "BATON_BROKER_URL": "memory://", "BATON_FLOWS_PATH": str(flows),
                "BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}"})
    return subprocess.run([sys.executable, "-m", "oss", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def test_an_index_with_leading_zeros_is_refused_naming_it_and_changes_nothing(tmp_path: Path) -> None:
    created = _baton(tmp_path, "submit", "guarded", "--json")
    assert created.returncode == 0, created.stderr
    task_id = json.loads(created.stdout)["TaskId"]
    store = SqliteStore(tmp_path / "baton.db")
    try:
        version = store.get(task_id).Version
        for args, value in ((("act", task_id, "00", "approve"), "'00'"),
                            (("approve", task_id, "00"), "'00'"),
                            (("skip", task_id, "--step", "00"), "'00'"),
                            (("skip", task_id, "--step", "1", "--item", "01"), "'01'"),
                            (("get", task_id, "--items", "00"), "'00'")):
            done = _baton(tmp_path, *args, *(("--reason", "typo") if args[0] != "get" else ()))
            assert done.returncode == 2, (args, done.returncode, done.stdout, done.stderr)
            assert value in done.stderr and "leading zeros" in done.stderr, (args, done.stderr)
            assert "Traceback" not in done.stderr
        task = store.get(task_id)
        assert task.Version == version and task.Steps[0].Decisions == []
    finally:
        store.close()
