"""A `baton` command that only reads, or acts on tasks that must exist, never makes a store: a
mistyped SQLite path says that no store exists there (exit 5, docs/reference/cli.md) and leaves
no file or folder behind; `baton submit` run outside the checkout names BATON_FLOWS_PATH; and
`baton --version` answers. Real `baton` processes, each in a folder of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from common.errors import EXIT_UNAVAILABLE
from tests.support.cluster import REPO, STATE_DEADLINE

pytestmark = pytest.mark.slow


def _baton(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    base.update({"PYTHONPATH": str(REPO), "BATON_BROKER_URL": "memory://", **env})
    return subprocess.run([sys.executable, "-m", "oss", *args], cwd=cwd, env=base, capture_output=True,
                          text=True, timeout=STATE_DEADLINE)  # fmt: skip


@pytest.mark.parametrize("args", [["list"], ["get", "X"], ["watch", "X"], ["locks"], ["modules"],
                                  ["cancel", "X", "--reason", "typo"], ["bulk", "cancel", "--type", "demo", "--reason", "r"],
                                  ["hosts", "list"], ["hosts", "drain", "h1"], ["schedules", "list"],
                                  ["schedules", "delete", "s1"]],
                         ids=lambda a: " ".join(a[:2]))  # fmt: skip
def test_a_mistyped_sqlite_path_says_no_store_exists_and_creates_nothing(tmp_path: Path, args: list[str]) -> None:
    missing = tmp_path / "nonexistent" / "dir" / "x.db"
    done = _baton(tmp_path, *args, BATON_STORE_URL=f"sqlite:{missing}", BATON_FLOWS_PATH=str(REPO / "flows.yaml"))
    assert done.returncode == EXIT_UNAVAILABLE, done
    assert f"sqlite {missing}: no store exists there" in done.stderr and "BATON_STORE_URL" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "nonexistent").exists()


def test_list_in_any_folder_leaves_no_store_behind(tmp_path: Path) -> None:
    done = _baton(tmp_path, "list")  # the default store URL: var/baton.db in the working folder
    assert done.returncode == EXIT_UNAVAILABLE, done
    assert "sqlite var/baton.db: no store exists there" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_read_command_on_an_existing_store_still_answers(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'baton.db'}"
    flows = str(REPO / "flows.yaml")
    created = _baton(tmp_path, "submit", "demo", BATON_STORE_URL=url, BATON_FLOWS_PATH=flows)
    assert created.returncode == 0, created
    task_id = created.stdout.split()[1]
    listed = _baton(tmp_path, "list", BATON_STORE_URL=url, BATON_FLOWS_PATH=flows)
    assert listed.returncode == 0 and task_id in listed.stdout, listed


def test_submit_outside_the_checkout_names_the_flows_setting(tmp_path: Path) -> None:
    done = _baton(tmp_path, "submit", "demo", BATON_STORE_URL=f"sqlite:///{tmp_path / 'baton.db'}")
    assert done.returncode == 2, done
    assert "flows.yaml:1: (root): cannot read the file" in done.stderr
    assert f"(read from {tmp_path})" in done.stderr and "BATON_FLOWS_PATH" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing created: not the store either


def test_version_prints_the_installed_version(tmp_path: Path) -> None:
    from importlib import metadata

    done = _baton(tmp_path, "--version")
    assert done.returncode == 0, done
    assert done.stdout == f"baton {metadata.version('baton')}\n"
