"""The sweeper's retention job for closed inventory claims (on a real SQLite inventory file)."""

from __future__ import annotations

from common.settings import load_settings
from modules.resource.inventory.port import Capacity
from modules.resource.inventory.sqlite import SqliteInventory
from oss.services.claim_retention import ClaimRetention
from oss.wiring import build, build_sweeper

DAY = 86400.0
NOW = 1_700_000_000.0


def test_claims_closed_longer_ago_than_the_retention_are_forgotten_hourly(tmp_path):
    inventory = SqliteInventory(tmp_path / "baton.db")
    inventory.add_host("db-1", Capacity(8, 8192, 100), NOW)
    for key, closed_at in (("old", NOW - 3 * DAY), ("recent", NOW - DAY / 2)):
        inventory.reserve(key, Capacity(1, 1, 1), f"holder-{key}", closed_at, closed_at + 60)
        inventory.deduct(key, closed_at)
        inventory.release(f"holder-{key}", f"release-{key}", closed_at)
    inventory.reserve("open", Capacity(1, 1, 1), "holder-open", NOW - 3 * DAY, NOW + DAY)
    job = ClaimRetention(inventory, retention_seconds=2 * DAY, every=3600)
    assert job(NOW) == 1
    assert inventory.get_claim("old", NOW) is None
    assert inventory.get_claim("recent", NOW) is not None and inventory.get_claim("open", NOW) is not None
    assert job(NOW + DAY) == 0  # within the hour: not run (the claim below is not looked at)
    assert job(NOW + 3599) == 0
    assert job(NOW + 2 * DAY) == 1  # "recent" is now past the retention too
    job.close()


def test_the_sweeper_runs_the_job_only_when_a_retention_is_set(tmp_path, monkeypatch):
    store_url = f"sqlite:///{tmp_path / 'baton.db'}"
    for days, expected in ((0, False), (30, True)):
        monkeypatch.setenv("BATON_RESOURCE_CLAIM_RETENTION_DAYS", str(days))  # the resource module's setting
        settings = load_settings(store_url=store_url)
        parts = build(settings)
        sweeper = build_sweeper(settings, parts.store, parts.broker, parts.service)
        assert any(isinstance(job, ClaimRetention) for job in sweeper._jobs) is expected
        for job in sweeper._jobs:
            job.close()
        parts.close()
