"""/readyz of a real OSS process on a real SecantusDB server that is stopped, then frozen: it
answers not-ready within its probe bound (about 2 s), not after the store's own timeout (set to
60 s here, so an unbounded probe cannot answer within the client's 25 s)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.support.cluster import REPO, wait_until
from tests.support.ports import free_port
from tests.support.secantus import fresh_database_name, secantus_server

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

CLIENT_TIMEOUT = 25.0  # far above the probe's bound, far below the store's timeout
FLOWS = "version: 1\ntask_types:\n  one:\n    steps:\n      - name: one\n        normal: {module: mysql, command: noop}\n"


def readyz(port: int) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=CLIENT_TIMEOUT) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def answers(port: int) -> bool:
    with contextlib.suppress(OSError):
        return readyz(port)[0] == 200
    return False


def test_readyz_reports_a_stopped_or_frozen_store_within_its_bound(tmp_path, rabbitmq_url) -> None:
    flows = tmp_path / "flows.yaml"
    flows.write_text(FLOWS)
    with secantus_server("baton-readyz") as server:
        port = free_port()
        env = {
            **os.environ, "PYTHONPATH": str(REPO), "BATON_STORE_URL": server.database_url(fresh_database_name()),
            "BATON_BROKER_URL": rabbitmq_url, "BATON_FLOWS_PATH": str(flows), "BATON_LOG_FORMAT": "json",
            "BATON_LEASE_SECONDS": "180", "BATON_STORE_TIMEOUT_SECONDS": "60", "BATON_OSS_SWEEPER": "false",
            "BATON_SHUTDOWN_GRACE_SECONDS": "1",
        }  # fmt: skip
        log = tmp_path / "oss.log"
        with log.open("w") as out:
            proc = subprocess.Popen([sys.executable, "-m", "oss", "oss", "--port", str(port)], cwd=REPO, env=env,
                                    stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            wait_until(lambda: answers(port) or proc.poll() is not None, 60, "OSS ready")
            assert proc.poll() is None, log.read_text()[-3000:]

            server.stop()
            status, body = readyz(port)  # a timeout here: the probe waited for the store's own timeout
            assert status == 503 and body["checks"]["store"].startswith("failed") and body["checks"]["broker"] == "ok"
            # The answer needs no token: where the store is, and what its driver said, go to the log only.
            assert str(server.port) not in json.dumps(body) and "127.0.0.1" not in json.dumps(body), body
            wait_until(lambda: "readiness probe failed" in log.read_text(), 30, "the probe's detail in the log")
            line = next(line for line in log.read_text().splitlines() if "readiness probe failed" in line)
            assert str(server.port) in json.loads(line)["error"], line

            server.start()
            wait_until(lambda: answers(port), 60, "ready again once the server is back")
            server.freeze()
            try:
                status, body = readyz(port)
                assert status == 503 and body["checks"]["store"].startswith("failed"), body
            finally:
                server.thaw()
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
