"""`baton oss` in production log format: every line it prints is one JSON object.

uvicorn used to set up logging of its own: its start and stop lines and one access line per
request came out as plain text among baton's JSON lines, with no level field a log shipper could
read, and the access lines cost the API a twentieth of its CPU per request.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid

import httpx

from tests.api.support import FLOWS
from tests.support.cluster import REPO, STATE_DEADLINE, wait_until
from tests.support.ports import free_port

TOKEN = "log-lines-token-0123456789"


def test_every_line_of_oss_is_json_and_requests_are_not_logged_one_by_one(tmp_path):
    (tmp_path / "flows.yaml").write_text(FLOWS)
    port = free_port()
    env = {
        **os.environ, "PYTHONPATH": str(REPO), "BATON_LOG_FORMAT": "json", "BATON_LOG_LEVEL": "info",
        "BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_FLOWS_PATH": str(tmp_path / "flows.yaml"),
        "BATON_BROKER_URL": f"memory://logs-{uuid.uuid4().hex}", "BATON_API_TOKENS": f"ops:{TOKEN}:operator",
    }  # fmt: skip
    server = subprocess.Popen([sys.executable, "-m", "oss", "oss", "--port", str(port)], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(base), 30, "OSS up")
        listed = httpx.get(f"{base}/api/v1/tasks", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=STATE_DEADLINE)
        assert listed.status_code == 200
    finally:
        server.send_signal(signal.SIGTERM)
        output, _ = server.communicate(timeout=STATE_DEADLINE)
    lines = [line for line in output.splitlines() if line.strip()]
    not_json = [line for line in lines if not _is_json_object(line)]
    assert not not_json, f"plain-text lines: {not_json}"
    events = [json.loads(line) for line in lines]
    assert all({"level", "timestamp", "event"} <= event.keys() for event in events), events
    uvicorn = [event for event in events if event.get("logger", "").startswith("uvicorn")]
    assert any("Uvicorn running" in event["event"] for event in uvicorn), events
    assert not any("/api/v1/tasks" in event["event"] for event in events), "an access line at info"


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False
