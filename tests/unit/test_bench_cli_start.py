"""bench/cli_start.py prints its rows, each with a figure (never what the figure is)."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.support.cluster import REPO


def test_the_cli_start_figures_are_printed() -> None:
    done = subprocess.run([sys.executable, "-m", "bench.cli_start", "1"], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=True)  # fmt: skip
    assert re.search(r"CLI start to exit: baton --help +\d+ ms .* CPU \d+ ms", done.stdout), done.stdout
    assert re.search(r"CLI start to exit: baton get ID \(SQLite\) +\d+ ms .* CPU \d+ ms", done.stdout), done.stdout
    assert re.search(r"CLI start to exit: baton list \(SQLite\) +\d+ ms .* CPU \d+ ms", done.stdout), done.stdout
