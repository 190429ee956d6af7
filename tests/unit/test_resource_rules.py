"""The inventory's and resource module's pure decisions."""

from __future__ import annotations

import pytest

from common.errors import CommandFailed
from modules.resource.inventory.port import Capacity, ClaimState, Host, HostState
from modules.resource.inventory.rules import choose_host, effective_state, no_room_message
from modules.resource.requests import DEFAULT_NEED, claim_key, holder_from, need_from


def host(name: str, free_cpu: int, used_memory: int = 0, state: HostState = HostState.ACTIVE) -> Host:
    return Host(name, Capacity(4, 4096, 100), state, Capacity(4 - free_cpu, used_memory, 0), 0.0)


def test_choose_host_takes_the_least_memory_in_use_among_active_hosts_with_room() -> None:
    need = Capacity(1, 512, 1)
    hosts = [host("a", 1, 2048), host("b", 2, 1024), host("c", 4, 0, HostState.DRAINING), host("d", 0, 0)]
    assert choose_host(hosts, need).name == "b"
    assert choose_host([host("a", 1, 100), host("b", 1, 100)], need).name == "a"  # ties by name
    assert choose_host([host("d", 0)], need) is None


def test_a_reservation_expires_at_its_expiry_not_after() -> None:
    assert effective_state(ClaimState.RESERVED, 10.0, 9.99) is ClaimState.RESERVED
    assert effective_state(ClaimState.RESERVED, 10.0, 10.0) is ClaimState.EXPIRED
    assert effective_state(ClaimState.DEDUCTED, None, 1e12) is ClaimState.DEDUCTED


def test_no_room_message_names_the_roomiest_host() -> None:
    message = no_room_message(Capacity(8, 1, 1), [host("a", 1), host("b", 3), host("c", 4, state=HostState.DRAINING)])
    assert "2 active hosts" in message and "(b)" in message


def test_need_defaults_and_checks() -> None:
    assert need_from({}) == DEFAULT_NEED
    assert need_from({"cpu": 2, "memory_mb": 512, "storage_gb": 0}) == Capacity(2, 512, 0)
    for bad in ({"cpu": -1}, {"cpu": True}, {"memory_mb": "1024"}, {"storage_gb": 1.5}):
        with pytest.raises(CommandFailed) as refused:
            need_from(bad)
        assert refused.value.retryable is False


def test_holder_is_the_instance_name_under_the_same_allow_list() -> None:
    assert holder_from({"name": "app_1"}) == "app_1"
    for bad in ({"name": "app'1"}, {"name": "a" * 33}, {}):
        with pytest.raises(CommandFailed, match="instance name"):
            holder_from(bad)
    assert claim_key("T1") == "task:T1"
