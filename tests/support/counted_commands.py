"""A command registry that notes every process importing it (one line per import in the file
BATON_TEST_IMPORT_LOG names): how often command children paid for the module's imports."""

import os

from common.runtime.demo_commands import add_demo_commands
from common.runtime.registry import CommandRegistry

if log := os.environ.get("BATON_TEST_IMPORT_LOG"):
    with open(log, "a") as lines:
        lines.write(f"{os.getpid()}\n")

counted = CommandRegistry("counted")
add_demo_commands(counted)
