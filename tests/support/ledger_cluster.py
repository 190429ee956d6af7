"""A cluster whose modules may serve tests/support/ledger_commands.py: every command noted in a
ledger (`cluster.ledger`) and each effect kept once per idempotency key (`cluster.effects`), with
a sweeper running; with `records`, steps over item records, in its processes and in this one."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from common.engine.kinds.for_each import records as fan_out
from tests.support.cluster import Cluster

REGISTRY = "tests.support.ledger_commands:ledger"


@contextlib.contextmanager
def ledger_cluster(workdir: Path, rabbitmq_url: str, flows: str, *, records: bool = False) -> Iterator[Cluster]:
    effects = workdir / "effects"
    effects.mkdir()
    env = {"BATON_TEST_LEDGER": str(workdir / "ledger.jsonl"), "BATON_TEST_EFFECTS": str(effects)}
    if records:
        env["BATON_ITEM_RECORDS"] = "1"
    # This process too: the service's own changes (a submission opens the root step).
    kept = fan_out.RECORDS_ENABLED
    fan_out.RECORDS_ENABLED = kept or records
    cluster = Cluster(workdir, rabbitmq_url, flows, extra_env=env)
    cluster.ledger, cluster.effects = workdir / "ledger.jsonl", effects
    try:
        cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()
        fan_out.RECORDS_ENABLED = kept
