"""`python -m bench.sizing`: the figures docs/operations/clusters-and-sizing.md sizes a deployment from, measured with the
pieces of `make bench` on this machine: a module process's CPU per transition and the rate one
process per module reached (SQLite), the same on the Mongo store with the server's operations per
transition (SecantusDB), and one OSS process's REST submissions.

Prints figures; asserts nothing. BATON_SIZING_TASKS (default 300) and BATON_SIZING_MONGO_TASKS
(default 100) three-step tasks.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bench.api import submissions
from bench.engine import FLOWS, MODULES, STEPS, start_cluster, throughput
from bench.mongo import measured, run_tasks, server_roles
from common.logging import configure_logging
from common.store.mongo.client import open_client
from tests.support.cluster import Cluster
from tests.support.secantus import secantus_server
from tests.support.vhosts import rabbitmq_vhost


def _line(name: str, value: str) -> None:
    print(f"  {name:<62} {value}", flush=True)


def _per_transition(label: str, result: dict) -> None:
    _line(f"{label}: step transitions", f"{result['transitions_per_second']:.0f} /s")
    for role, ms in result["cpu_ms_per_transition"].items():
        _line(f"{label}: CPU per transition, {role}", f"{ms:.2f} ms")


def main() -> None:
    configure_logging(level="warning")
    tasks = int(os.environ.get("BATON_SIZING_TASKS", "300"))
    mongo_tasks = int(os.environ.get("BATON_SIZING_MONGO_TASKS", "100"))
    print(f"sizing figures: {os.cpu_count()} cores, {STEPS}-step tasks, no-op commands", flush=True)
    with rabbitmq_vhost("baton-sizing") as url, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cluster = start_cluster(work / "sqlite", url, 1)
        try:
            throughput(cluster, min(100, tasks))  # warm-up
            _per_transition("SQLite, 1 process per module", throughput(cluster, tasks))
            flows_path = cluster.flows_path
        finally:
            cluster.stop_all()
        api = submissions(work, url, flows_path, seconds=5.0)
        _line("one OSS process: REST submissions", f"{api['submissions_per_second']:.0f} /s")
        _line("one OSS process: CPU per submission", f"{api['oss_cpu_ms_per_submission']:.2f} ms")
        (work / "mongo").mkdir()
        with secantus_server("baton-sizing") as server:
            mongo = Cluster(work / "mongo", url, FLOWS, {"BATON_FAULT_INJECTION": "0"},
                            mongo_url=server.database_url("sizing"))  # fmt: skip
            client = open_client(server.url)
            try:
                for module in MODULES:
                    mongo.start_module(module, name=f"{module}-0")
                run_tasks(mongo, min(30, mongo_tasks))  # warm-up
                result = measured(mongo, client, server_roles(mongo, server), mongo_tasks)
            finally:
                mongo.stop_all()
                client.close()
        _per_transition("Mongo (SecantusDB), 1 process per module", result)
        _line("Mongo: server operations per transition",
              f"{result['reads_per_transition']:.2f} reads, {result['writes_per_transition']:.2f} writes, "
              f"{result['commands_per_transition']:.2f} other")  # fmt: skip


if __name__ == "__main__":
    main()
