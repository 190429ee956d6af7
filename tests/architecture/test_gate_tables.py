"""A gate's own table and relay are a folder of the store, found by folder (docs/design/gates.md,
"A gate's own table and relay"): the store's openers, the MongoDB index catalog, the outbox
publisher and the sweeper's reclaim job name no gate's folder; what each folder declares resolves
to its adapters, indexes and a relay that carries exactly its flusher's kinds (and reclaims when
its table says so); and the checker names a planted name."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import common.store.gates

from common.engine.changes import Timing
from common.engine.outbox import kinds_of
from common.relay.outbox import OutboxPublisher
from common.store.factory import adapter_class
from common.store.gates import gate_table, gate_tables
from tests.architecture.import_graph import import_graph

ROOT = Path(__file__).resolve().parents[2]
GATE_TABLES = "common.store.gates."
# Who opens, indexes and relays every gate's table: they find them through common.store.gates.
FINDERS = {"common.store.side_stores", "common.store.mongo.indexes", "common.store.factory", "common.store.beside",
           "common.relay.outbox", "common.relay.gate_reclaims", "common.store.gates"}


# What the finders take of the registry itself (`from common.store.gates import gate_tables`).
REGISTRY_NAMES = {name for name, value in vars(common.store.gates).items() if not isinstance(value, ModuleType)}


def named_gate_tables(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(finder, the gate folder it names) for every import of a gate's folder by a finder."""
    return {(importer, ".".join(target.split(".")[:4])) for importer, targets in graph.items() if importer in FINDERS
            for target in targets
            if target.startswith(GATE_TABLES) and target.split(".")[3] not in REGISTRY_NAMES}


def test_the_finders_name_no_gate_table():
    assert named_gate_tables(import_graph(ROOT, ("common",))) == set()


def test_a_planted_name_of_a_gate_table_is_found(tmp_path):
    for name, text in {
        "common/__init__.py": "",
        "common/store/__init__.py": "",
        "common/store/side_stores.py": "from common.store.gates.rate.port import RateStore\n",
        "common/relay/outbox.py": "def later():\n    from common.store.gates.rate import relay\n",
        "common/relay/gate_reclaims.py": "from common.store.gates.lock.relay import LockRelay\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert named_gate_tables(import_graph(tmp_path, ("common",))) == {
        ("common.store.side_stores", "common.store.gates.rate"),
        ("common.relay.outbox", "common.store.gates.rate"),
        ("common.relay.gate_reclaims", "common.store.gates.lock"),
    }


def test_each_declared_table_resolves_to_its_adapters_indexes_and_relay():
    assert [table.gate for table in gate_tables()] == ["lock", "rate"]
    for table in gate_tables():
        assert (ROOT / "common" / "engine" / "gates" / table.gate).is_dir()  # named as its gate's folder
        sqlite, mongo = adapter_class(table.sqlite), adapter_class(table.mongo)
        indexes = adapter_class(table.mongo_indexes)
        assert list(indexes) == [mongo.COLLECTION] and sqlite.TABLE == mongo.COLLECTION
        relay = adapter_class(table.relay)(None, lambda: Timing(100.0), lambda task: None)
        assert set(relay.handlers()) == kinds_of(table.flusher)
        assert table.reclaim_every is None or callable(relay.reclaim)  # the sweeper's job calls it


def test_an_unknown_gate_table_is_named():
    try:
        gate_table("approval")
    except KeyError as exc:
        assert "'approval'" in str(exc) and "lock, rate" in str(exc)
    else:
        raise AssertionError("an unknown gate table opened")


def test_the_outbox_publisher_relays_every_declared_table(tmp_path):
    from common.store.factory import open_store

    store = open_store(f"sqlite:///{tmp_path / 'tasks.db'}")
    publisher = OutboxPublisher(store, broker=None, clock=lambda: 100.0)  # type: ignore[arg-type]
    try:
        assert set(publisher.gate_relays) == {table.flusher for table in gate_tables()}
        for table in gate_tables():
            assert type(publisher.gate_relays[table.flusher]) is adapter_class(table.relay)
    finally:
        publisher.stop()
        store.close()


def test_the_sweepers_reclaim_job_reclaims_every_table_that_declares_a_pace(tmp_path):
    from common.relay.gate_reclaims import GateReclaims
    from common.store.factory import open_store

    store = open_store(f"sqlite:///{tmp_path / 'tasks.db'}")
    publisher = OutboxPublisher(store, broker=None, clock=lambda: 100.0)  # type: ignore[arg-type]
    asked: list[str] = []
    for flusher, relay in publisher.gate_relays.items():
        relay.reclaim = lambda flusher=flusher: asked.append(flusher) or 0
    try:
        GateReclaims(publisher)(100.0)
        assert sorted(asked) == sorted(t.flusher for t in gate_tables() if t.reclaim_every is not None) != []
    finally:
        publisher.stop()
        store.close()
