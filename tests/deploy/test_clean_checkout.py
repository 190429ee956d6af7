"""The README's first command on a fresh checkout: `make run` in a copy of the repository, with no
virtual environment, no services and none of this machine's BATON_* settings. It must build its
own .venv, run the demo task, and serve the API until SIGTERM; the demo task is seen through it.

The slowest test of the suite: creating the venv and installing requirements.lock (pip may use
the machine's wheel cache)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.support import REPO, TOKEN_LINE, URL_LINE, http
from tests.support.ports import free_port
from tests.support.cluster import STATE_DEADLINE, wait_until

pytestmark = [pytest.mark.soak, pytest.mark.slow, pytest.mark.timeout(600)]
ALARMING = re.compile(r"error|warn|invalid|traceback|deprecat|fail|!!|\*\*\*\*", re.IGNORECASE)
# This machine's pip configuration names local index directories that may not exist: pip says
# so for every package, whatever the project does.
MACHINE_PIP = re.compile(r"^WARNING: Location 'file://\S+' is ignored: it is neither a file nor a directory\.$")
LEFT_OUT = ("tests/", "bench/")  # not needed to run baton; the copy stays small


def checkout(destination: Path) -> None:
    """The files a clone would have (and any not yet committed), without local state."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if name.startswith(LEFT_OUT) or not source.is_file():
            continue
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def bare_environment() -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("BATON_") and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    }
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin
    )
    return env


@pytest.mark.skipif(
    shutil.which("make") is None or shutil.which("git") is None, reason="needs make and git"
)
def test_make_run_on_a_fresh_checkout_serves_the_demo_task(tmp_path):
    clone = tmp_path / "baton"
    checkout(clone)
    assert not (clone / ".venv").exists()
    port = free_port()  # the one setting given: this machine may already serve something on 8080
    env = {**bare_environment(), "BATON_OSS_PORT": str(port)}
    log = tmp_path / "make-run.log"
    with log.open("w") as out:
        # A session of its own: Ctrl-C and `kill` of a terminal reach make and baton together.
        make = subprocess.Popen(
            ["make", "run"],
            cwd=clone,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until(
            # The announcement is written line by line: wait for its token line too.
            lambda: (URL_LINE.search(log.read_text()) and TOKEN_LINE.search(log.read_text())) or make.poll() is not None,
            480,
            "make run: the URL and the token",
        )
        output = log.read_text()
        assert URL_LINE.search(output), f"make run exited {make.returncode}:\n{output[-5000:]}"
        # The install and the start print nothing a newcomer would take for a failure (pip's
        # "invalid command 'bdist_wheel'" before a fallback that worked, setuptools' notices).
        alarming = [line for line in output.splitlines() if ALARMING.search(line) and not MACHINE_PIP.search(line)]
        assert not alarming, "\n".join(alarming[:40])
        base = URL_LINE.search(output).group(1)
        assert base == f"http://127.0.0.1:{port}"
        token = TOKEN_LINE.search(output).group(1)
        status, page = http("GET", f"{base}/api/v1/tasks?task_type=demo", token=token)
        assert status == 200, page
        assert [task["TaskStatusName"] for task in page["items"]] == ["SUCCESS"]
        assert (clone / ".venv" / "bin" / "baton").exists() and (
            clone / "var" / "baton.db"
        ).exists()
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGTERM)
        try:
            make.wait(timeout=STATE_DEADLINE)
        except subprocess.TimeoutExpired:
            os.killpg(make.pid, signal.SIGKILL)
            raise
    output = log.read_text()
    assert output.rstrip().endswith("baton stopped"), output[-3000:]  # stopped cleanly, not killed
