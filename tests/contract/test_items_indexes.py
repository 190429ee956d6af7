"""The item records' queries are index look-ups: no statement of the SQLite store scans the table,
and on a wire-protocol server the step's queries walk the indexes of common.store.mongo.indexes.
The item records' table and indexes are made by `baton store init`."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner
from pymongo import MongoClient, monitoring

from common.engine.kinds.for_each.item_record import OWES_SETTLED, ItemRecord
from common.engine.states import StepState
from common.store.mongo import indexes as mongo_indexes
from common.store.mongo.items import MongoItemStore
from common.store.items.open import open_item_store_for
from common.store.sqlite.items import SqliteItemStore
from common.store.mongo.tasks import MongoStore
from common.store.sqlite.tasks import SqliteStore
from oss.cli import main as cli
from tests.contract.test_items_contract import changed, record, running
from tests.support.secantus import fresh_database_name

S = StepState.SUCCEEDED


def every_method(store: Any) -> None:
    """Each method of the port once, on a small step."""
    store.insert_items([record(i) for i in range(6)] + [running(6, 10.0, Owes=[OWES_SETTLED])])
    current = store.get_item("t1", 0, 2, 1)
    store.compare_and_set_item(changed(current, State=S, Open=False), current.Version)
    store.any_open("t1", 0, 2)
    store.count_by_state("t1", 0, 2)
    store.attempt_sums("t1", 0, 2)
    store.page_failed("t1", 0, 2, after=1, limit=3)
    store.page_items("t1", 0, 2, after=1, limit=3)
    store.page_items("t1", 0, 2, after=1, limit=3, states=[S, StepState.WAITING])
    store.page_items("t1", 0, 2, modulus=3, residue=1)
    store.page_items("t1", 0, 2, modulus=3, residue=1, limit=1_000)
    store.page_items("t1", 0, 2, modulus=3, residue=1, states=[S])
    store.outputs("t1", 0, 2)
    store.due_for_sweep(100.0, 5)
    store.unsent_outbox(100.0, 5)
    store.owing(5)
    store.delete_task_items("t1")


def test_no_sqlite_statement_scans_the_table(tmp_path: Any) -> None:
    store = SqliteItemStore(tmp_path / "baton.db")
    statements: list[str] = []
    conn = store._conns.get()  # the calling thread's connection: every call below uses it
    conn.set_trace_callback(statements.append)
    every_method(store)
    conn.set_trace_callback(None)
    queries = [s for s in statements if s.split()[0].upper() in ("SELECT", "UPDATE", "DELETE", "INSERT")]
    assert len(queries) >= 15, statements
    for sql in queries:
        plan = [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
        for step in (line for line in plan if "task_items" in line):
            # The owing index is partial: it holds only the records owing a notice.
            assert step.startswith("SEARCH task_items USING") or step == "SCAN task_items USING INDEX task_items_owing", (sql, plan)
    store.close()


class _Commands(monitoring.CommandListener):
    def __init__(self) -> None:
        self.commands: list[dict[str, Any]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:  # type: ignore[override]
        if event.command_name in ("find", "aggregate"):
            self.commands.append(dict(event.command))

    def succeeded(self, event: Any) -> None: ...

    def failed(self, event: Any) -> None: ...


def _stages(plan: dict[str, Any]) -> list[str]:
    stages = []
    while plan:
        stages.append(f"{plan['stage']}:{plan.get('indexName', '')}")
        plan = plan.get("inputStage", {})
    return stages


@pytest.fixture
def listened(secantus_url: str) -> Any:
    listener = _Commands()
    client: Any = MongoClient(secantus_url, event_listeners=[listener], serverSelectionTimeoutMS=10_000)
    name = fresh_database_name()
    yield client, name, listener
    client.drop_database(name)
    client.close()


def test_a_servers_planner_answers_the_steps_queries_from_the_indexes(listened: Any) -> None:
    client, name, listener = listened
    every_method(MongoItemStore(client, name))
    plans: dict[str, list[str]] = {}
    for command in listener.commands:
        query = {k: v for k, v in command.items() if k not in ("lsid", "$db", "$clusterTime", "$readPreference")}
        explained = client[name].command("explain", query)
        what = str(command.get("filter", command.get("pipeline")))
        plans[what] = _stages(explained["queryPlanner"]["winningPlan"])
    by_step = {what: stages for what, stages in plans.items() if "TaskId" in what or "_id" in what}
    assert len(by_step) >= 8, plans
    for what, stages in by_step.items():
        assert any(stage.startswith("IXSCAN:") for stage in stages), (what, stages)
    assert any("IXSCAN:state_item" in stages for stages in by_step.values()), by_step
    assert any("IXSCAN:open" in stages for stages in by_step.values()), by_step


def test_the_partial_indexes_hold_only_what_is_due_or_owed(secantus_client: Any) -> None:
    name = fresh_database_name()
    try:
        MongoStore(secantus_client, name)  # as OSS opens it: every collection's indexes
        assert mongo_indexes.check(secantus_client[name], ["task_items"]) == []
        indexes = secantus_client[name]["task_items"].index_information()
        assert indexes["item"]["unique"] is True
        assert indexes["sweep_at"]["partialFilterExpression"] == {"SweepAt": {"$type": "number"}}
        assert indexes["outbox_due_at"]["partialFilterExpression"] == {"OutboxDue": {"$type": "number"}}
        assert indexes["owing"]["partialFilterExpression"] == {"Owes": {"$type": "string"}}
    finally:
        secantus_client.drop_database(name)


def test_no_two_indexes_of_a_collection_share_a_key_pattern() -> None:
    # MongoDB before 5.0 refuses a second index on the same keys, even with another partial
    # filter: the owing records' index has a key of its own.
    for collection, specs in mongo_indexes.catalog().specs.items():  # a module's too
        patterns = [tuple(spec.keys) for spec in specs]
        assert len(patterns) == len(set(patterns)), collection


@pytest.mark.parametrize("opener", ["sqlite", "mongo"])
def test_the_item_store_beside_a_task_store_sees_the_same_records(
    opener: str, tmp_path: Any, secantus_client: Any
) -> None:
    name = fresh_database_name()
    open_tasks: Callable[[], Any] = (
        (lambda: SqliteStore(tmp_path / "baton.db")) if opener == "sqlite" else (lambda: MongoStore(secantus_client, name))
    )
    tasks = open_tasks()
    beside, again = open_item_store_for(tasks), open_item_store_for(open_tasks())
    try:
        assert beside.insert_items([record(0)]) == 1
        assert again.get_item("t1", 0, 2, 0) == record(0)
    finally:
        beside.close()
        again.close()
        tasks.close()
        secantus_client.drop_database(name)


def test_baton_store_init_makes_the_item_table_on_sqlite(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "baton.db"
    monkeypatch.setenv("BATON_STORE_URL", f"sqlite:///{path}")
    result = CliRunner().invoke(cli, ["store", "init"])
    assert result.exit_code == 0 and "store ready" in result.output, result.output
    with sqlite3.connect(path) as conn:
        indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'task_items'")}
    assert {"task_items", "task_items_open", "task_items_state", "task_items_owing"} <= indexes


def test_a_repeated_insert_of_item_records_is_told_from_a_real_failure(secantus_client: Any) -> None:
    name = fresh_database_name()
    store = MongoItemStore(secantus_client, name)
    try:
        assert store.insert_items([record(0), record(1)]) == 2
        assert store.insert_items([record(1), record(2), record(0)]) == 1  # duplicates only: not an error
        assert [r.Item for r in store.page_items("t1", 0, 2)] == [0, 1, 2]
        assert isinstance(ItemRecord.from_doc(secantus_client[name]["task_items"].find_one({"_id": "t1:g0:2:2"})), ItemRecord)
    finally:
        secantus_client.drop_database(name)
