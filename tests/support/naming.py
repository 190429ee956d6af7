"""Names for what a test makes on the machine's shared servers (vhosts, databases, users, temp
directories): each carries the run's id, the pytest-xdist worker's id and a random part.

The run's id is made once by the process that starts pytest and handed to its xdist workers (and
to every child process) through the environment, so a name seen on the broker or in MariaDB says
which run and which worker made it, and two runs side by side, or two workers of one run, never
pick the same one.
"""

from __future__ import annotations

import os
import uuid

RUN_ENV = "BATON_TEST_RUN_ID"


def run_id() -> str:
    """Four hex digits, the same in every worker of one run (set by the first to ask: the
    controller's conftest asks before the workers start)."""
    value = os.environ.get(RUN_ENV)
    if not value:
        value = uuid.uuid4().hex[:4]
        os.environ[RUN_ENV] = value
    return value


def worker_id() -> str:
    """`w0`, `w1`, ... under pytest-xdist (its `gw0`, `gw1`, ...); `m` in a run without workers."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return "w" + worker.removeprefix("gw") if worker else "m"


def unique_name(prefix: str, sep: str = "-", random_chars: int = 8) -> str:
    """`prefix-RUN-WORKER-RANDOM`: RabbitMQ vhosts, Mongo databases, temp directories."""
    return sep.join((prefix, run_id(), worker_id(), uuid.uuid4().hex[:random_chars]))


def short_tag(random_chars: int = 4) -> str:
    """`RUNWORKERRANDOM` in lowercase letters and digits only, for names with a tight length
    limit (MariaDB sandboxes: an instance name is at most 32 characters)."""
    return f"{run_id()}{worker_id()}{uuid.uuid4().hex[:random_chars]}"
