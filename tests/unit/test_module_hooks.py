"""How oss reaches a module's own domain: the hooks a module declares in modules/<name>/hooks.py,
found by common.runtime.discovery.module_hooks (no import of the module in oss)."""

from __future__ import annotations

from common.runtime.discovery import module_hooks


def test_the_mysql_module_offers_its_reconciler_and_its_job():
    (maker,) = module_hooks("reconciler")
    (job,) = module_hooks("background_job")
    assert maker.__module__ == job.__module__ == "modules.mysql.hooks"


def test_a_hook_no_module_offers_is_none():
    assert module_hooks("no such hook") == []
