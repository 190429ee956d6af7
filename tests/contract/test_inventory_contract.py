"""The Inventory contract: one set of tests, run against every adapter.

Test ids name the backend: [sqlite], [mongo-mongomock] (an in-memory fake, not a server) and, when
a real MongoDB is reachable, [mongo-real] (see the store contract's report header for which ran).
The races are tests/contract/test_inventory_races.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from modules.resource.inventory.port import (
    Capacity,
    ClaimClosed,
    ClaimState,
    HostConflict,
    HostState,
    InvalidInventoryInput,
    KeyReused,
    NoCapacity,
    UnknownClaim,
    UnknownHost,
)
from tests.contract.inventory_amounts import HOST, NOW, SMALL, TTL, reserve
from tests.contract.inventory_fixtures import (  # noqa: F401  (fixtures are found by name)
    Backend,
    backend,
    inventory,
)

# --- hosts ---------------------------------------------------------------------------------------


def test_add_get_and_list_hosts(inventory: Any) -> None:
    added = inventory.add_host("db-2", HOST, NOW)
    inventory.add_host("db-1", Capacity(8, 8192, 200), NOW)
    assert added.name == "db-2" and added.capacity == HOST and added.state is HostState.ACTIVE
    assert added.used == Capacity() and added.free == HOST and added.created_at == NOW
    assert inventory.get_host("db-2", NOW) == added
    assert inventory.get_host("nope", NOW) is None
    assert [h.name for h in inventory.list_hosts(NOW)] == ["db-1", "db-2"]


def test_adding_a_host_again_is_idempotent_but_not_with_another_capacity(inventory: Any) -> None:
    first = inventory.add_host("db-1", HOST, NOW)
    assert inventory.add_host("db-1", HOST, NOW + 5) == first
    with pytest.raises(HostConflict, match="exists with capacity"):
        inventory.add_host("db-1", Capacity(1, 1, 1), NOW)
    assert len(inventory.list_hosts(NOW)) == 1


@pytest.mark.parametrize("name", ["", "DB-1", "-db", "db_1", "db 1", "d" * 64, "db-1'", "dé"])
def test_bad_host_names_are_refused(inventory: Any, name: str) -> None:
    with pytest.raises(InvalidInventoryInput, match="host name"):
        inventory.add_host(name, HOST, NOW)
    assert inventory.list_hosts(NOW) == []


@pytest.mark.parametrize("capacity", [Capacity(-1, 1, 1), Capacity(1, True, 1), Capacity(1, 1, 1.5)])  # type: ignore[arg-type]
def test_bad_amounts_are_refused(inventory: Any, capacity: Capacity) -> None:
    with pytest.raises(InvalidInventoryInput):
        inventory.add_host("db-1", capacity, NOW)
    inventory.add_host("db-1", HOST, NOW)
    with pytest.raises(InvalidInventoryInput):
        reserve(inventory, "k", capacity)


def test_a_draining_host_keeps_its_claims_and_takes_no_new_ones(inventory: Any) -> None:
    inventory.add_host("db-1", HOST, NOW)
    held = reserve(inventory, "k1")
    drained = inventory.set_host_state("db-1", HostState.DRAINING, NOW)
    assert drained.state is HostState.DRAINING and drained.used == SMALL
    with pytest.raises(NoCapacity, match="none active"):
        reserve(inventory, "k2")
    assert inventory.deduct(held.key, NOW).state is ClaimState.DEDUCTED  # what it holds, it keeps
    assert inventory.set_host_state("db-1", HostState.ACTIVE, NOW).state is HostState.ACTIVE
    assert reserve(inventory, "k2").host == "db-1"
    with pytest.raises(UnknownHost):
        inventory.set_host_state("nope", HostState.DRAINING, NOW)


# --- reserve -------------------------------------------------------------------------------------


def test_reserve_places_on_the_host_with_the_least_memory_in_use(inventory: Any) -> None:
    inventory.add_host("db-a", HOST, NOW)
    inventory.add_host("db-b", HOST, NOW)
    first = reserve(inventory, "k1", Capacity(1, 2048, 1))
    second = reserve(inventory, "k2", Capacity(1, 1024, 1))
    third = reserve(inventory, "k3", Capacity(1, 512, 1))
    assert (first.host, second.host, third.host) == ("db-a", "db-b", "db-b")
    assert first.state is ClaimState.RESERVED and first.expires_at == NOW + TTL and first.holder == "app"
    used = {h.name: h.used for h in inventory.list_hosts(NOW)}
    assert used == {"db-a": Capacity(1, 2048, 1), "db-b": Capacity(2, 1536, 2)}


def test_reserve_needs_room_in_every_resource(inventory: Any) -> None:
    inventory.add_host("db-1", Capacity(2, 1024, 10), NOW)
    for need in (Capacity(3, 1, 1), Capacity(1, 1025, 1), Capacity(1, 1, 11)):
        with pytest.raises(NoCapacity, match="no active host has room"):
            reserve(inventory, f"k-{need.cpu}-{need.memory_mb}", need)
    assert reserve(inventory, "fits", Capacity(2, 1024, 10)).host == "db-1"
    with pytest.raises(NoCapacity):
        reserve(inventory, "full", Capacity(0, 1, 0))
    assert inventory.get_claim("full", NOW) is None  # a refusal leaves nothing behind


def test_reserve_without_hosts_says_so(inventory: Any) -> None:
    with pytest.raises(NoCapacity, match="no active host"):
        reserve(inventory, "k1")


def test_reserving_a_key_again_returns_the_same_claim_and_takes_nothing_more(inventory: Any) -> None:
    inventory.add_host("db-1", HOST, NOW)
    first = reserve(inventory, "k1")
    assert reserve(inventory, "k1", now=NOW + 1) == first
    assert inventory.get_host("db-1", NOW).used == SMALL
    with pytest.raises(KeyReused):
        reserve(inventory, "k1", Capacity(2, 1024, 10))
    with pytest.raises(KeyReused):
        reserve(inventory, "k1", holder="other")


def test_an_expired_reservation_stops_counting_and_its_key_stays_closed(inventory: Any) -> None:
    inventory.add_host("db-1", Capacity(1, 1024, 10), NOW)
    reserve(inventory, "k1", ttl=10)
    with pytest.raises(NoCapacity):
        reserve(inventory, "k2", now=NOW + 9.9)
    later = NOW + 10  # expiry is inclusive: at expires_at it no longer counts
    assert inventory.get_claim("k1", later).state is ClaimState.EXPIRED
    assert inventory.get_host("db-1", later).used == Capacity()
    assert reserve(inventory, "k2", now=later).host == "db-1"
    # A closed claim is never revived: reserving its key again answers with it as it stands.
    assert reserve(inventory, "k1", now=later).state is ClaimState.EXPIRED
    assert inventory.get_host("db-1", later).used == SMALL


def test_expire_due_closes_lapsed_reservations_only(inventory: Any) -> None:
    inventory.add_host("db-1", HOST, NOW)
    reserve(inventory, "short", ttl=5)
    reserve(inventory, "long", ttl=50)
    reserve(inventory, "charged", ttl=5)
    inventory.deduct("charged", NOW)
    assert inventory.expire_due(NOW + 4) == 0
    assert inventory.expire_due(NOW + 5) == 1
    assert inventory.expire_due(NOW + 6) == 0
    states = {c.key: c.state for c in inventory.list_claims(NOW + 6)}
    assert states == {"short": ClaimState.EXPIRED, "long": ClaimState.RESERVED, "charged": ClaimState.DEDUCTED}
    assert inventory.get_host("db-1", NOW + 6).used == Capacity(2, 2048, 20)


# --- deduct, restore, release --------------------------------------------------------------------


def test_deduct_turns_a_reservation_into_a_deduction_that_never_expires(inventory: Any) -> None:
    inventory.add_host("db-1", HOST, NOW)
    reserve(inventory, "k1", ttl=10)
    charged = inventory.deduct("k1", NOW + 1)
    assert charged.state is ClaimState.DEDUCTED and charged.expires_at is None
    assert inventory.deduct("k1", NOW + 2) == charged  # again: the same answer
    much_later = NOW + 10 * TTL
    assert inventory.get_claim("k1", much_later).state is ClaimState.DEDUCTED
    assert inventory.get_host("db-1", much_later).used == SMALL


def test_deduct_refuses_unknown_expired_and_restored_claims(inventory: Any) -> None:
    inventory.add_host("db-1", HOST, NOW)
    with pytest.raises(UnknownClaim):
        inventory.deduct("nope", NOW)
    reserve(inventory, "lapsed", ttl=10)
    with pytest.raises(ClaimClosed, match="expired") as caught:
        inventory.deduct("lapsed", NOW + 10)
    assert caught.value.claim.state is ClaimState.EXPIRED
    assert inventory.get_host("db-1", NOW + 10).used == Capacity()
    reserve(inventory, "given-back")
    inventory.restore("given-back", NOW)
    with pytest.raises(ClaimClosed, match="restored"):
        inventory.deduct("given-back", NOW)


@pytest.mark.parametrize("charged", [False, True])
def test_restore_gives_a_reservation_or_deduction_back_once(inventory: Any, charged: bool) -> None:
    inventory.add_host("db-1", HOST, NOW)
    reserve(inventory, "k1")
    reserve(inventory, "k2", holder="other")
    if charged:
        inventory.deduct("k1", NOW)
    restored = inventory.restore("k1", NOW + 1)
    assert restored.state is ClaimState.RESTORED and restored.updated_at == NOW + 1
    assert inventory.restore("k1", NOW + 2) == restored
    assert inventory.get_host("db-1", NOW + 2).used == SMALL  # only k2 is left
    assert inventory.restore("unknown", NOW) is None


@pytest.mark.parametrize("charged", [False, True])
def test_a_late_reserve_after_restore_reserves_nothing(inventory: Any, charged: bool) -> None:
    """A check_resource that outlived its claim (a frozen replica) reserves again after the
    rollback's restore: the key is closed for good, so nothing is taken, even with room to spare."""
    inventory.add_host("db-1", HOST, NOW)
    reserve(inventory, "run-1")
    if charged:
        inventory.deduct("run-1", NOW)
    inventory.restore("run-1", NOW + 1)
    late = reserve(inventory, "run-1", now=NOW + 2)
    assert late.state is ClaimState.RESTORED and not late.live
    assert inventory.get_host("db-1", NOW + 2).used == Capacity()
    assert [c.key for c in inventory.list_claims(NOW + 2, live_only=True)] == []
    with pytest.raises(ClaimClosed):
        inventory.deduct("run-1", NOW + 3)  # nor can a late deduct charge it


def test_restore_leaves_an_expired_reservation_expired(inventory: Any) -> None:
    inventory.add_host("db-1", HOST, NOW)
    reserve(inventory, "k1", ttl=10)
    assert inventory.restore("k1", NOW + 10).state is ClaimState.EXPIRED
    assert inventory.get_host("db-1", NOW + 10).used == Capacity()


def test_release_closes_the_holders_deductions_once_per_key(inventory: Any) -> None:
    inventory.add_host("db-1", HOST, NOW)
    reserve(inventory, "mine", holder="app_1")
    reserve(inventory, "pending", holder="app_1")  # not deducted: a release leaves it alone
    reserve(inventory, "theirs", holder="app_2")
    inventory.deduct("mine", NOW)
    inventory.deduct("theirs", NOW)
    released = inventory.release("app_1", "delete-1", NOW + 1)
    assert [(c.key, c.state, c.released_by) for c in released] == [("mine", ClaimState.RELEASED, "delete-1")]
    assert inventory.release("app_1", "delete-1", NOW + 2) == released
    assert inventory.get_host("db-1", NOW + 2).used == Capacity(2, 2048, 20)
    assert inventory.release("app_1", "delete-2", NOW + 3) == []
    assert inventory.release("nobody", "delete-3", NOW) == []
    assert inventory.get_claim("theirs", NOW).state is ClaimState.DEDUCTED


def test_list_claims_filters(inventory: Any) -> None:
    inventory.add_host("db-a", HOST, NOW)
    inventory.add_host("db-b", HOST, NOW)
    reserve(inventory, "k1", holder="x", now=NOW)
    reserve(inventory, "k2", holder="y", now=NOW + 1)
    reserve(inventory, "k3", holder="x", now=NOW + 2)
    inventory.restore("k3", NOW + 3)
    assert [c.key for c in inventory.list_claims(NOW + 3)] == ["k1", "k2", "k3"]
    assert [c.key for c in inventory.list_claims(NOW + 3, holder="x")] == ["k1", "k3"]
    assert [c.key for c in inventory.list_claims(NOW + 3, holder="x", live_only=True)] == ["k1"]
    assert [c.key for c in inventory.list_claims(NOW + 3, host="db-b")] == ["k2"]


def test_prune_forgets_claims_closed_long_ago(inventory: Any) -> None:
    inventory.add_host("db-1", HOST, NOW)
    reserve(inventory, "old", now=NOW)
    inventory.restore("old", NOW)
    reserve(inventory, "recent", now=NOW + 1)
    inventory.restore("recent", NOW + 100)
    reserve(inventory, "live", now=NOW + 2)
    assert inventory.prune_closed(NOW + 50) == 1
    assert [c.key for c in inventory.list_claims(NOW + 100)] == ["recent", "live"]


def test_claims_survive_reopening(backend: Backend) -> None:
    first = backend.open_inventory()
    first.add_host("db-1", HOST, NOW)
    reserve(first, "k1")
    first.close()
    second = backend.open_inventory()
    try:
        assert second.get_claim("k1", NOW).state is ClaimState.RESERVED
        assert second.get_host("db-1", NOW).used == SMALL
    finally:
        second.close()


# --- opening by URL ------------------------------------------------------------------------------


def test_open_inventory_and_event_log_share_the_task_stores_url(tmp_path: Any) -> None:
    from common.errors import ConfigError
    from common.store.factory import open_store
    from common.store.side_stores import open_event_log
    from modules.resource.inventory.factory import open_inventory

    url = f"sqlite:///{tmp_path / 'baton.db'}"
    store, inv, events = open_store(url), open_inventory(url), open_event_log(url)
    try:
        inv.add_host("db-1", HOST, NOW)
        assert open_inventory(url).get_host("db-1", NOW) is not None  # the same file
        store.ping()
    finally:
        store.close(), inv.close(), events.close()
    mock = open_inventory("mongomock:///inventory_factory_test")
    mock.add_host("db-9", HOST, NOW)
    assert open_inventory("mongomock:///inventory_factory_test").get_host("db-9", NOW) is not None
    with pytest.raises(ConfigError):
        open_inventory("redis://x")
