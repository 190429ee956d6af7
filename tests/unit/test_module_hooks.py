"""How oss reaches a module's own domain: the hooks a module declares in modules/<name>/hooks.py,
found by common.module_hooks.module_hooks (no import of the module in oss)."""

from __future__ import annotations

import pytest

from common.module_hooks import module_hook, module_hooks
from common.store import mongo_indexes


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


def test_the_index_catalog_holds_the_stores_and_the_modules_collections():
    known = mongo_indexes.catalog()
    assert {"tasks", "task_items", "inventory_hosts", "inventory_closed_claims"} <= set(known.specs)
    assert known.obsolete["inventory_hosts"] == ["claim_released_by"]
    assert "inventory_hosts" not in mongo_indexes.SPECS  # common itself knows no module's collection


def test_a_hook_offered_by_no_module_or_by_two_is_a_lookup_error():
    with pytest.raises(LookupError, match="no module offers the 'no such hook' hook"):
        module_hook("no such hook")
