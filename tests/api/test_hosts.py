"""The inventory's hosts over REST: what `baton hosts` does, with the API's roles and errors."""

from __future__ import annotations

from tests.api.support import OPERATOR, READER, auth

HOST = {"name": "db-host-1", "cpu": 8, "memory_mb": 16384, "storage_gb": 200}


def test_add_list_drain_and_activate_a_host(api):
    added = api.client.post("/api/v1/hosts", json=HOST, headers=auth(OPERATOR))
    assert added.status_code == 201, added.text
    assert added.json()["capacity"] == {"cpu": 8, "memory_mb": 16384, "storage_gb": 200}
    assert added.json()["state"] == "active" and added.json()["used"]["cpu"] == 0
    listed = api.client.get("/api/v1/hosts", headers=auth(READER)).json()["items"]
    assert [h["name"] for h in listed] == ["db-host-1"]
    drained = api.client.post("/api/v1/hosts/db-host-1/drain", headers=auth(OPERATOR))
    assert drained.status_code == 200 and drained.json()["state"] == "draining"
    active = api.client.post("/api/v1/hosts/db-host-1/activate", headers=auth(OPERATOR))
    assert active.json()["state"] == "active"


def test_adding_the_same_host_again_changes_nothing_and_other_capacity_conflicts(api):
    assert api.client.post("/api/v1/hosts", json=HOST, headers=auth(OPERATOR)).status_code == 201
    again = api.client.post("/api/v1/hosts", json=HOST, headers=auth(OPERATOR))
    assert again.status_code == 201 and again.json()["capacity"]["cpu"] == 8
    other = api.client.post("/api/v1/hosts", json={**HOST, "cpu": 4}, headers=auth(OPERATOR))
    assert other.status_code == 409 and other.json()["error"]["code"]


def test_host_errors(api):
    assert api.client.get("/api/v1/hosts").status_code == 401
    assert api.client.post("/api/v1/hosts", json=HOST, headers=auth(READER)).status_code == 403
    assert api.client.post("/api/v1/hosts/nope/drain", headers=auth(OPERATOR)).status_code == 404
    bad = api.client.post("/api/v1/hosts", json={**HOST, "cpu": -1, "name": "a b"}, headers=auth(OPERATOR))
    assert bad.status_code == 422
    assert {f["path"] for f in bad.json()["error"]["fields"]} >= {"cpu", "name"}


def test_hosts_live_in_the_inventory_the_resource_module_uses(tmp_path, monkeypatch):
    """BATON_RESOURCE_INVENTORY_URL, when set, is where the API reads and adds hosts."""
    from fastapi.testclient import TestClient

    from modules.resource.inventory.factory import open_inventory
    from tests.api.support import open_api

    elsewhere = f"sqlite:///{tmp_path / 'inventory.db'}"
    monkeypatch.setenv("BATON_RESOURCE_INVENTORY_URL", elsewhere)  # the resource module's setting
    app, store, broker = open_api(tmp_path)
    with TestClient(app) as client:
        assert client.post("/api/v1/hosts", json=HOST, headers=auth(OPERATOR)).status_code == 201
        assert [h["name"] for h in client.get("/api/v1/hosts", headers=auth(READER)).json()["items"]] == ["db-host-1"]
    store.close()
    broker.close()
    assert [h.name for h in open_inventory(elsewhere).list_hosts(0.0)] == ["db-host-1"]
    assert open_inventory(f"sqlite:///{tmp_path / 'api.db'}").list_hosts(0.0) == []
