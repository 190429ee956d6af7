"""A sweeper that has said "sweeper started" stops gracefully on SIGTERM, however early: a
supervisor or a test that waits for that line may stop the process at once. The signal handler
is therefore installed before the sweeper's thread starts, not after the modules' background jobs.

The window is widened on purpose: the background jobs' start (a module's reconciler, say, whose
store answers slowly) is made to take two seconds, and the SIGTERM is sent as soon as the line
shows. A handler installed only after them would leave the default action: the process killed
by the signal, its threads not joined, its store not closed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.support.cluster import REPO, STATE_DEADLINE

SLOW_JOBS_START = (
    "import runpy, sys, time\n"
    "import common.module_hooks as hooks\n"
    "real = hooks.module_hooks\n"
    "def slow(name):\n"
    "    if name == 'background_job':\n"
    "        time.sleep(2)\n"
    "    return real(name)\n"
    "hooks.module_hooks = slow\n"
    "sys.argv = ['oss', 'sweeper']\n"
    "runpy.run_module('oss', run_name='__main__', alter_sys=True)\n"
)


def test_sigterm_right_after_sweeper_started_stops_it_cleanly(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    env.update({"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_BROKER_URL": "memory://",
                "BATON_FLOWS_PATH": str(REPO / "flows.yaml"), "BATON_LOG_FORMAT": "json"})  # fmt: skip
    subprocess.run([sys.executable, "-m", "oss", "store", "init"], env=env, cwd=REPO, capture_output=True,
                   timeout=STATE_DEADLINE, check=True)  # fmt: skip
    log = tmp_path / "sweeper.log"
    with log.open("w") as out:
        sweeper = subprocess.Popen([sys.executable, "-c", SLOW_JOBS_START], env=env, cwd=REPO, stdout=out,
                                   stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + STATE_DEADLINE
        while "sweeper started" not in log.read_text():
            assert sweeper.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        sweeper.send_signal(signal.SIGTERM)
        returncode = sweeper.wait(STATE_DEADLINE)
    finally:
        if sweeper.poll() is None:
            sweeper.kill()
            sweeper.wait()
    assert returncode == 0, f"the sweeper ended with {returncode} (-15: killed by the signal)\n{log.read_text()}"
