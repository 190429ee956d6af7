"""Live OSS for the client's tests: `baton oss` as a real process, with the modules and the
sweeper as processes of their own (tests.support.oss_deployment), or alone."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx

from tests.support.cluster import REPO, wait_until
from tests.support.oss_deployment import oss_deployment
from tests.support.ports import free_port

OPERATOR = "client-test-operator-0123456789"
READER = "client-test-reader-0123456789ab"
TOKENS = f"olga:{OPERATOR}:operator,rita:{READER}:read"
# `hold` naps for its `hold` parameter (seconds): long enough to pause or cancel a running step.
FLOWS = """
version: 1
defaults: {timeout: 30, retry: 0}
task_types:
  provision:
    description: Reserve, create, finish.
    parameters:
      name: {type: string, required: true, pattern: "^[a-z][a-z0-9_]{0,31}$"}
      hold: {type: number, default: 0.05}
    steps:
      - name: reserve
        normal:   {module: resource, command: step_a}
        rollback: {module: resource, command: undo_a}
      - name: create
        normal:   {module: mysql, command: hold}
        rollback: {module: mysql, command: undo_b}
      - name: finish
        normal:   {module: resource, command: step_c}
  fleet:
    parameters:
      nodes: {type: array, required: true}
    steps:
      - name: per_node
        for_each: nodes
        normal: {module: mysql, command: step_item}
  create_mysql_instance:
    description: The docs' example, on stand-in commands.
    parameters:
      name: {type: string, required: true, pattern: "^[a-z][a-z0-9_]{0,31}$"}
      cpu: {type: integer, minimum: 1, maximum: 64, default: 1}
    steps:
      - name: check_resource
        normal:   {module: resource, command: check_resource}
        rollback: {module: resource, command: restore_resource}
      - name: init_instance
        normal:   {module: mysql, command: init_instance}
        rollback: {module: mysql, command: clean_instance}
      - name: deduct_resource
        normal:   {module: resource, command: deduct_resource}
        rollback: {module: resource, command: restore_resource}
  catching_up:
    description: Its second step is never done (its command answers "check again later").
    steps:
      - name: reserve
        normal:   {module: resource, command: step_a}
        rollback: {module: resource, command: undo_a}
      - name: catch_up
        normal:   {module: mysql, command: await_caught_up}
  parked:
    description: Served by a module no test runs (drained and undrained by the tests).
    steps:
      - name: only
        normal: {module: spare, command: noop}
"""
STANDINS = {"resource": "tests.support.standin_commands:resource", "mysql": "tests.support.standin_commands:mysql"}


@contextlib.contextmanager
def deployment(workdir: Path, rabbitmq_url: str, mongo_url: str | None = None) -> Iterator[str]:
    """OSS, the resource and mysql modules (stand-in commands) and a sweeper; yields OSS's URL.
    `mongo_url`: a MongoDB store (BATON_TEST_STORE=mongo) instead of a SQLite file."""
    with oss_deployment(workdir, rabbitmq_url, FLOWS, STANDINS, mongo_url=mongo_url,
                        extra_env={"BATON_API_TOKENS": TOKENS}) as (_, url):  # fmt: skip
        yield url


class LoneOss:
    """`baton oss` alone (its own sweeper off), on one port across restarts."""

    def __init__(self, workdir: Path, store_url: str, broker_url: str, env: Mapping[str, str] = {}):
        flows = workdir / "flows.yaml"
        flows.write_text(FLOWS)
        self.port, self.log = free_port(), workdir / f"oss-{uuid.uuid4().hex[:6]}.log"
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ, "PYTHONPATH": str(REPO), "BATON_STORE_URL": store_url, "BATON_BROKER_URL": broker_url,
            "BATON_FLOWS_PATH": str(flows), "BATON_API_TOKENS": TOKENS, "BATON_OSS_SWEEPER": "false",
            "BATON_LOG_FORMAT": "json", "BATON_SHUTDOWN_GRACE_SECONDS": "1", **env,
        }  # fmt: skip
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        """Returns once it answers /healthz."""
        with self.log.open("a") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "oss", "oss", "--port", str(self.port)], cwd=REPO,
                                         env=self.env, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        proc = self.proc
        wait_until(lambda: answers(self.url) or proc.poll() is not None, 120, "OSS answering")
        assert proc.poll() is None, self.log.read_text()[-3000:]

    def kill(self) -> None:
        """SIGKILL: its connections drop at once, as when its machine dies."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def lone_oss(workdir: Path, store_url: str, broker_url: str, env: Mapping[str, str] = {}) -> Iterator[LoneOss]:
    oss = LoneOss(workdir, store_url, broker_url, env)
    try:
        oss.start()
        yield oss
    finally:
        oss.stop()


def answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False
