"""bench.module_instructions runs a module under valgrind in a real cluster and prints its
instructions per transition by thread (never what the figures are)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.support.cluster import REPO

pytestmark = [pytest.mark.soak, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.mark.skipif(shutil.which("callgrind_control") is None, reason="valgrind is not installed")
def test_the_module_threads_are_counted_by_name():
    done = subprocess.run([sys.executable, "-m", "bench.module_instructions", "--tasks", "3"], cwd=REPO,
                          capture_output=True, text=True, timeout=840, check=True)  # fmt: skip
    for thread in ("baton-rabbit-mysql", "baton-rabbit-publisher", "baton-store", "total"):
        assert re.search(rf"^  {thread} +[1-9]\d* k$", done.stdout, re.MULTILINE), done.stdout
