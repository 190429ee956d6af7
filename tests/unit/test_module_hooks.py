"""How oss reaches a module's own domain: the hooks a module declares in modules/<name>/hooks.py,
found by common.module_hooks.module_hooks (no import of the module in oss)."""

from __future__ import annotations

import pytest

from common.module_hooks import module_hook, module_hooks
from common.store.mongo import indexes as mongo_indexes


def test_the_mysql_module_offers_its_reconciler_and_its_job():
    (maker,) = module_hooks("reconciler")
    (job,) = module_hooks("background_job")
    assert maker.__module__ == job.__module__ == "modules.mysql.hooks"


def test_a_hook_no_module_offers_is_none():
    assert module_hooks("no such hook") == []


def test_the_resource_module_offers_its_inventory_and_its_indexes():
    inventory = module_hook("inventory")
    assert inventory.__name__ == "modules.resource.inventory"
    assert inventory.open_inventory.__module__ == "modules.resource.inventory.factory"
    (indexes,) = module_hooks("mongo_indexes")
    assert set(indexes().specs) == {"inventory_hosts", "inventory_closed_claims", "inventory_releases"}


def test_the_resource_module_offers_its_inventory_settings_read_from_baton_resource_variables(tmp_path, monkeypatch):
    from common.settings import load_settings

    load = module_hook("inventory_settings")
    beside = f"sqlite:///{tmp_path / 'baton.db'}"
    monkeypatch.setenv("BATON_STORE_URL", beside)
    assert load().inventory_url_beside(beside) == beside and load().claim_retention_seconds == 0  # the defaults
    module_hook("inventory").open_configured_inventory(load_settings()).add_host(
        "db-1", module_hook("inventory").Capacity(1, 1, 1), 0.0
    )  # beside the tasks
    elsewhere = f"sqlite:///{tmp_path / 'inventory.db'}"
    monkeypatch.setenv("BATON_RESOURCE_INVENTORY_URL", elsewhere)
    monkeypatch.setenv("BATON_RESOURCE_CLAIM_RETENTION_DAYS", "2")
    assert load().inventory_url_beside(beside) == elsewhere and load().claim_retention_seconds == 2 * 86400
    assert module_hook("inventory").open_configured_inventory(load_settings()).list_hosts(0.0) == []
    assert [h.name for h in module_hook("inventory").open_inventory(beside).list_hosts(0.0)] == ["db-1"]


def test_the_index_catalog_holds_the_stores_and_the_modules_collections():
    known = mongo_indexes.catalog()
    assert {"tasks", "task_items", "inventory_hosts", "inventory_closed_claims"} <= set(known.specs)
    assert known.obsolete["inventory_hosts"] == ["claim_released_by"]
    assert "inventory_hosts" not in mongo_indexes.SPECS  # common itself knows no module's collection


def test_a_hook_offered_by_no_module_or_by_two_is_a_lookup_error():
    with pytest.raises(LookupError, match="no module offers the 'no such hook' hook"):
        module_hook("no such hook")
