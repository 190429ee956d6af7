"""`python -m tests.support.run_registry package.module:registry`: a module process serving any
command registry (the test stand-ins), exactly as `python -m modules.<name>` serves a real one."""

import sys

from common.runtime.main import run_module

if __name__ == "__main__":  # command children (spawned) import this file too: only the parent runs
    run_module(sys.argv[1])
