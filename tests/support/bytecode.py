"""Bytecode caches for the checkout, written once when a test run starts.

A run starts hundreds of Python processes from this checkout (module replicas and their
forkservers, sweepers, OSS, every `baton` CLI call, the pytest-xdist workers), and each imports
most of baton. With PYTHONDONTWRITEBYTECODE set, as in this project's container image and on
machines built like it, none of them leaves a `__pycache__` behind, so every one of them compiled
the same few hundred files from source: about a third of a module process's start. The run
compiles them once instead, before any worker or process starts; Python reads such caches
whether or not it may write them, and recompiles (in memory) any file changed since.

The test modules themselves are cached by pytest, rewritten for its assertions, only when the
pytest process may write bytecode: `allow_in_this_process` lets it, so the workers of the next run
skip the rewrite (two thirds of a worker's collection).

The caches go where Python puts them by default (`__pycache__` beside each file, ignored by git).
"""

from __future__ import annotations

import compileall
import re
import sys
from pathlib import Path

# What the run's processes import from the checkout (client/ is on their path too).
PACKAGES = ("common", "oss", "modules", "tests", "tools", "bench", "deploy", "client/baton_client")
# pytest imports these through its assertion rewriter, which keeps a cache of its own.
REWRITTEN_BY_PYTEST = re.compile(r"(^|/)(test_[^/]*|conftest)\.py$")


def compile_checkout(root: Path) -> None:
    """Write the bytecode cache of every source file of PACKAGES under `root` that has none or an
    outdated one (compileall compares the source's time and size: unchanged files cost a stat)."""
    for package in PACKAGES:
        if (root / package).is_dir():
            compileall.compile_dir(root / package, quiet=2, workers=1, rx=REWRITTEN_BY_PYTEST)


def allow_in_this_process() -> None:
    """Let this pytest process write bytecode caches (its rewritten test modules among them),
    whatever PYTHONDONTWRITEBYTECODE says; the processes it starts keep the variable as it is."""
    sys.dont_write_bytecode = False
