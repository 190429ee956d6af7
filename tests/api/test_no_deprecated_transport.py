"""The suite ran with one warning: starlette's TestClient deprecates httpx as its transport in
favour of httpx2 (requirements.lock pins it). Importing the test client warns of nothing."""

from __future__ import annotations

import subprocess
import sys


def test_the_test_client_imports_without_a_deprecation_warning():
    run = subprocess.run([sys.executable, "-W", "error", "-c", "import fastapi.testclient"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
