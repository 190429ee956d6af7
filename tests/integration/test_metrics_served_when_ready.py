"""A module or sweeper process serves /metrics (BATON_METRICS_PORT) before it logs that it started:
a supervisor or test that waits for "module started" / "sweeper started" may scrape at once.

Each process runs for real (its own interpreter, a SQLite store, the in-process broker); the
moment it would start is replaced by a look at its own metrics port, then an exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cluster import STATE_DEADLINE
from tests.support.ports import free_port

REPO = Path(__file__).resolve().parents[2]
FLOWS = """
version: 1
task_types:
  one:
    steps:
      - name: a
        normal: {module: resource, command: step_a}
"""
# Run in the process under test: at the moment it would start, is its metrics port answering?
LOOK = """
import os, sys, urllib.request
def look(*_args, **_kwargs):  # the sweeper's runs on a thread of its own: os._exit ends the process
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=30).read()
        print("served", flush=True)
    except OSError as exc:
        print(f"not served: {exc}", flush=True)
    os._exit(7)
"""
MODULE = LOOK + """
from common.runtime.module import ModuleRuntime
ModuleRuntime.start = look
from common.runtime.main import run_module
run_module("tests.support.standin_commands:resource")
"""
SWEEPER = LOOK + """
from common.relay.sweeper import Sweeper
Sweeper.run = look
from oss.cli import main
main(["sweeper"])
"""


@pytest.mark.parametrize("program", [MODULE, SWEEPER], ids=["module", "sweeper"])
def test_metrics_are_served_before_the_process_says_it_started(program, tmp_path):
    flows = tmp_path / "flows.yaml"
    flows.write_text(FLOWS)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "client")]),
           "BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_BROKER_URL": "memory://",
           "BATON_FLOWS_PATH": str(flows), "BATON_METRICS_PORT": str(port)}  # fmt: skip
    subprocess.run([sys.executable, "-m", "oss", "store", "init"], env=env, cwd=tmp_path, check=True,
                   capture_output=True, timeout=STATE_DEADLINE)  # fmt: skip
    ran = subprocess.run([sys.executable, "-c", program, str(port)], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=STATE_DEADLINE)  # fmt: skip
    assert "served" in ran.stdout.splitlines(), f"{ran.stdout}\n{ran.stderr[-3000:]}"
