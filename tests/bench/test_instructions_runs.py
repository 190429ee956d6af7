"""bench.instructions and bench.document_instructions run under valgrind and print their figures
(never what the figures are)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.support.cluster import REPO

pytestmark = [pytest.mark.soak, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.mark.skipif(shutil.which("vgdb") is None, reason="valgrind is not installed")
def test_the_instruction_count_is_printed():
    done = subprocess.run([sys.executable, "-m", "bench.instructions", "1", "3"], cwd=REPO, capture_output=True,
                          text=True, timeout=840, check=True)  # fmt: skip
    assert re.search(r"an async no-op transition in one module process .*: \d+\.\d\d M instructions", done.stdout), done


@pytest.mark.skipif(shutil.which("vgdb") is None, reason="valgrind is not installed")
def test_the_document_parts_are_counted():
    done = subprocess.run([sys.executable, "-m", "bench.document_instructions", "8"], cwd=REPO, capture_output=True,
                          text=True, timeout=840, check=True)  # fmt: skip
    for part in ("transition", "kept transition", "decode", "encode", "compare-and-set", "claim", "finish_attempt"):
        assert re.search(rf"^ *{part}: +\d+ K instructions$", done.stdout, re.M), done
