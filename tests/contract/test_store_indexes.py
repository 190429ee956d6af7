"""The store's indexes: listings walk an index in order, the sweeper's indexes hold unfinished
tasks only, indexes are created once (OSS, `baton store init`), only checked by modules, never
touched by command children, and a changed definition never stops a process from starting."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from click.testing import CliRunner

from common.store.mongo import indexes as mongo_indexes
from modules.resource.inventory.mongo import MongoInventory
from common.store.mongo.tasks import MongoStore
from common.store.sqlite.tasks import SqliteStore
from oss.cli import main as cli
from tests.support.secantus import fresh_database_name

LISTING_ORDER = [("TimeCreate", -1), ("TaskId", -1)]


@pytest.fixture
def database(secantus_client: Any) -> Any:
    name = fresh_database_name()
    yield secantus_client[name]
    secantus_client.drop_database(name)


def keys(info: dict[str, Any]) -> list[tuple[str, int]]:
    return [(k, int(d)) for k, d in info["key"]]


@pytest.mark.parametrize("field", ["TaskStatus", "TaskType", "UserId"])
def test_each_filtered_listing_has_an_index_ending_in_the_listing_order(database: Any, field: str) -> None:
    # Equality on `field`, then the sort keys with the TaskId tie-break: MongoDB can then return
    # a page in index order. Without the tie-break it sorts every match in memory.
    MongoStore(database.client, database.name)
    indexes = database["tasks"].index_information()
    assert any(keys(info) == [(field, 1), *LISTING_ORDER] for info in indexes.values()), indexes
    # (TimeCreate) alone would duplicate the head of time_id.
    assert not any(keys(info) == [("TimeCreate", -1)] for info in indexes.values())


def test_the_sweeper_and_relay_indexes_leave_finished_tasks_out(database: Any) -> None:
    MongoStore(database.client, database.name)
    indexes = database["tasks"].index_information()
    assert indexes["sweep_at"]["partialFilterExpression"] == {"SweepAt": {"$type": "number"}}
    assert indexes["outbox_due_at"]["partialFilterExpression"] == {"OutboxDue": {"$type": "number"}}
    # Format 1 documents in flight (no SweepAt yet) keep theirs until their next write.
    assert indexes["deadline"]["partialFilterExpression"] == {"Active.Deadline": {"$exists": True}}
    assert indexes["outbox_due"]["partialFilterExpression"] == {"Outbox.DueAt": {"$exists": True}}


@pytest.mark.parametrize("where", ["status = 1", "task_type = 'x'", "user_id = 'u'"])
def test_sqlite_filtered_listings_need_no_sort(tmp_path: Any, where: str) -> None:
    path = str(tmp_path / "baton.db")
    SqliteStore(path).close()
    with sqlite3.connect(path) as conn:
        plan = conn.execute(
            f"EXPLAIN QUERY PLAN SELECT doc FROM tasks WHERE {where} ORDER BY time_create DESC, task_id DESC LIMIT 5"
        ).fetchall()
        names = {row[1] for row in conn.execute("PRAGMA index_list(tasks)")}
    assert not any("TEMP B-TREE" in row[-1] for row in plan), plan
    assert "tasks_time" not in names


def test_modules_only_check_and_command_children_touch_nothing(database: Any) -> None:
    checked = MongoStore(database.client, database.name, indexes="check")
    MongoInventory(database.client, database.name, indexes="none")
    assert database.list_collection_names() == []  # nothing created, not even a collection
    assert "tasks.task_id: missing" in checked.index_report
    MongoStore(database.client, database.name)  # OSS: creates every index of the database
    assert mongo_indexes.check(database) == []
    assert MongoStore(database.client, database.name, indexes="check").index_report == []


def test_a_changed_index_definition_warns_and_migrate_replaces_it(database: Any) -> None:
    # As an older (or newer) version left it: same name, another definition, plus one no longer used.
    database["tasks"].create_index([("Active.Deadline", 1)], name="deadline")
    database["tasks"].create_index([("TimeCreate", -1)], name="time")
    store = MongoStore(database.client, database.name)  # before: OperationFailure, no start
    assert any(p.startswith("tasks.deadline: differs") for p in store.index_report), store.index_report
    assert "tasks.time: no longer used" in store.index_report
    done = mongo_indexes.migrate(database)
    assert "tasks.deadline: dropped (changed definition)" in done and "tasks.time: dropped (no longer used)" in done
    assert mongo_indexes.check(database) == []
    assert mongo_indexes.migrate(database) == []  # again: nothing to do


def test_the_resource_modules_indexes_are_created_checked_and_migrated_with_the_stores(database: Any) -> None:
    # Offered by the resource module's `mongo_indexes` hook: common names none of them itself.
    database["inventory_hosts"].create_index([("claims.released_by", 1)], name="claim_released_by")
    MongoStore(database.client, database.name)  # OSS: creates every index of the database
    assert {"claim_key", "claim_expiry"} <= set(database["inventory_hosts"].index_information())
    assert "holder" in database["inventory_closed_claims"].index_information()
    assert mongo_indexes.check(database) == ["inventory_hosts.claim_released_by: no longer used"]
    assert mongo_indexes.migrate(database) == ["inventory_hosts.claim_released_by: dropped (no longer used)"]
    assert mongo_indexes.check(database) == []


def test_baton_store_init_and_migrate(database: Any, secantus_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATON_STORE_URL", secantus_url + database.name)
    database["tasks"].create_index([("Outbox.DueAt", 1)], name="outbox_due")
    runner = CliRunner()
    init = runner.invoke(cli, ["store", "init"])
    assert init.exit_code == 1 and "tasks.outbox_due: differs" in init.output, init.output
    migrate = runner.invoke(cli, ["store", "migrate"])
    assert migrate.exit_code == 0 and "tasks.outbox_due: created" in migrate.output, migrate.output
    again = runner.invoke(cli, ["store", "init"])
    assert again.exit_code == 0 and "store ready" in again.output, again.output
