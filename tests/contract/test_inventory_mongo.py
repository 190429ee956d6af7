"""What only the MongoDB inventory can get wrong: a release spans several documents (so a crash
part-way must be finishable), and a host document must not keep every claim it ever had (16 MB
would stop reservations at about 67,000 claims). On SecantusDB and on mongomock."""

from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import AutoReconnect

from common.errors import StoreError
from modules.resource.inventory.mongo import ARCHIVE_AFTER_SECONDS, COLLECTION, MongoInventory
from modules.resource.inventory.port import Capacity, ClaimState
from tests.support.secantus import fresh_database_name

NOW = 1_700_000_000.0
NEED = Capacity(1, 512, 10)


@pytest.fixture(params=["mongo-mongomock", "mongo-secantus"])
def opened(request: pytest.FixtureRequest) -> Any:
    """(client, database name) on a fresh database."""
    if request.param == "mongo-mongomock":
        import mongomock

        yield mongomock.MongoClient(), fresh_database_name()
        return
    client = request.getfixturevalue("secantus_client")
    name = fresh_database_name()
    yield client, name
    client.drop_database(name)


class CrashAfter:
    """The hosts collection, failing like a dropped connection after `n` claim releases."""

    def __init__(self, collection: Any, n: int):
        self._collection, self._left = collection, n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)

    def update_one(self, query: Any, update: Any, **kwargs: Any) -> Any:
        if update.get("$set", {}).get("claims.$.state") == "released":
            if self._left == 0:
                raise AutoReconnect("connection closed (the process died here)")
            self._left -= 1
        return self._collection.update_one(query, update, **kwargs)


def test_a_release_cut_short_by_a_crash_finishes_when_run_again(opened: Any) -> None:
    client, database = opened
    inventory = MongoInventory(client, database)
    inventory.add_host("db-1", Capacity(8, 8192, 100), NOW)
    inventory.add_host("db-2", Capacity(8, 8192, 100), NOW)
    for key in ("a", "b", "c"):  # the least used host wins: the claims spread over both hosts
        inventory.reserve(key, NEED, "task-1", NOW, NOW + 600)
        inventory.deduct(key, NOW)
    assert {c.host for c in inventory.list_claims(NOW)} == {"db-1", "db-2"}
    inventory._hosts = CrashAfter(inventory._hosts, 1)  # type: ignore[assignment]
    with pytest.raises(StoreError):
        inventory.release("task-1", "release-1", NOW + 1)
    rerun = MongoInventory(client, database)  # the process that takes over
    released = rerun.release("task-1", "release-1", NOW + 2)
    assert sorted(c.key for c in released) == ["a", "b", "c"]
    assert all(c.state is ClaimState.RELEASED for c in rerun.list_claims(NOW + 2))
    assert all(h.used == Capacity() for h in rerun.list_hosts(NOW + 2))
    # Repeating it changes nothing, and a later deduction of the same holder is not swept in.
    rerun.reserve("d", NEED, "task-1", NOW + 3, NOW + 600)
    rerun.deduct("d", NOW + 3)
    assert sorted(c.key for c in rerun.release("task-1", "release-1", NOW + 4)) == ["a", "b", "c"]
    assert rerun.get_claim("d", NOW + 4).state is ClaimState.DEDUCTED  # type: ignore[union-attr]


def test_a_host_document_keeps_only_open_and_recent_claims(opened: Any) -> None:
    client, database = opened
    inventory = MongoInventory(client, database)
    inventory.add_host("db-1", Capacity(8, 8192, 100), NOW)
    step = ARCHIVE_AFTER_SECONDS / 3
    rounds = 30
    for i in range(rounds):
        now = NOW + i * step
        inventory.reserve(f"k{i}", NEED, f"task-{i}", now, now + 600)
        inventory.deduct(f"k{i}", now)
        inventory.release(f"task-{i}", f"release-{i}", now)
    last = NOW + (rounds - 1) * step
    held = client[database][COLLECTION].find_one({"_id": "db-1"})["claims"]
    # Claims closed within the grace period stay; older ones have moved out.
    assert len(held) <= 4, [c["key"] for c in held]
    # Everything the port shows is unchanged: every claim, its state, who released it.
    claims = inventory.list_claims(last)
    assert [c.key for c in claims] == [f"k{i}" for i in range(rounds)]
    assert all(c.state is ClaimState.RELEASED and c.host == "db-1" for c in claims)
    assert [c.key for c in inventory.list_claims(last, holder="task-0")] == ["k0"]
    assert [c.key for c in inventory.release("task-0", "release-0", last)] == ["k0"]
    assert inventory.list_claims(last, live_only=True) == []
    assert inventory.get_host("db-1", last).used == Capacity()  # type: ignore[union-attr]
    # A moved claim's key never reserves again: it answers with the closed claim.
    again = inventory.reserve("k0", NEED, "task-0", last, last + 600)
    assert again.state is ClaimState.RELEASED and again.created_at == NOW
    # Retention: pruning forgets claims closed before the cutoff, wherever they are.
    assert inventory.prune_closed(last + 1) == rounds
    assert inventory.list_claims(last + 1) == [] and inventory.get_claim("k0", last + 1) is None
