"""What the processes a deployment starts many of do not import: a command child's set-up and the
sweeper leave out the parts of baton only other processes use (each import is CPU at every start).
Checked on sys.modules of real processes, so the test does not depend on how fast the machine is."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.cluster import REPO


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    env.update({"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_BROKER_URL": "memory://",
                "BATON_FLOWS_PATH": str(REPO / "flows.yaml"), "BATON_LOG_FORMAT": "json"})  # fmt: skip
    return env


def test_a_command_child_s_set_up_builds_no_step_kinds(tmp_path) -> None:
    # A child's setup reads the settings; with every webhook event (the default) there is no
    # event name to check, so the step kinds (the engine's registry) stay unbuilt.
    code = (
        "import json, sys\nimport common.runtime.child, modules.resource.commands\n"
        "from common.settings import load_settings\nload_settings()\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path), cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    assert "common.settings" in modules
    assert "common.engine.registry" not in modules


def test_named_webhook_events_are_still_checked(tmp_path) -> None:
    env = {**_env(tmp_path), "BATON_WEBHOOK_EVENTS": "succeeded,no_such_event"}
    code = "from common.settings import load_settings\nload_settings()"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "no_such_event" in done.stderr


# The sweeper runs no module: neither the module runtime (its threads, dispatcher, command
# children) nor the all-in-one demo's parts.
NOT_FOR_THE_SWEEPER = ("common.runtime.module", "common.runtime.dispatcher", "oss.cli.processes", "oss.cli.render")


def test_the_sweeper_imports_no_module_runtime(tmp_path) -> None:
    env = _env(tmp_path)
    subprocess.run([sys.executable, "-m", "oss", "store", "init"], env=env, cwd=REPO, capture_output=True, timeout=120,
                   check=True)  # fmt: skip
    listing = tmp_path / "modules.json"
    # The sweeper as `python -m oss sweeper` runs it, writing its modules as it exits.
    code = (
        "import atexit, json, runpy, sys\n"
        f"atexit.register(lambda: open({str(listing)!r}, 'w').write(json.dumps(sorted(sys.modules))))\n"
        "sys.argv = ['oss', 'sweeper']\nrunpy.run_module('oss', run_name='__main__', alter_sys=True)"
    )
    log = tmp_path / "sweeper.log"
    with log.open("w") as out:
        sweeper = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while "sweeper started" not in log.read_text():
            assert sweeper.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        sweeper.send_signal(signal.SIGTERM)
        sweeper.wait(60)
    finally:
        if sweeper.poll() is None:
            sweeper.kill()
            sweeper.wait()
    modules = set(json.loads(listing.read_text()))
    assert "oss.wiring" in modules  # the probe ran the sweeper
    assert sorted(m for m in NOT_FOR_THE_SWEEPER if m in modules) == []

