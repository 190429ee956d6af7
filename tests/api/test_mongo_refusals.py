"""The API on the Mongo store (a real server, SecantusDB): data the store cannot hold is a clear
refusal (422), not "store unavailable" (503, which clients retry forever) nor a 500."""

from __future__ import annotations

from fastapi.testclient import TestClient

from common.broker.inprocess import InProcessBroker
from common.flows import load_flows
from common.store.mongo.tasks import MongoStore
from oss.api import create_app
from oss.settings import load_oss_settings
from tests.api.support import FLOWS, TOKENS, auth
from tests.support.secantus import fresh_database_name


def test_a_task_too_large_for_a_mongo_document_is_422_and_stores_nothing(tmp_path, secantus_client, secantus_url):
    flows_path = tmp_path / "flows.yaml"
    flows_path.write_text(FLOWS)
    database = fresh_database_name()
    store = MongoStore(secantus_client, database)
    broker = InProcessBroker()
    settings = load_oss_settings(
        store_url=secantus_url + database, flows_path=str(flows_path), api_tokens=TOKENS,
        oss_sweeper=False, max_body_bytes=64 * 1024 * 1024,
        # baton's own input limits (256 KiB by default) raised, so the store's is what refuses
        input_max_bytes=32 * 1024 * 1024, input_max_string=32 * 1024 * 1024,
    )  # fmt: skip
    app = create_app(settings, store=store, broker=broker, flows=load_flows(flows_path))
    try:
        with TestClient(app) as client:
            # 17 MB of parameters: past MongoDB's 16 MB document limit, within the body limit.
            big = {"task_type": "free_form", "parameters": {"blob": "x" * (17 * 1024 * 1024)}}
            response = client.post("/api/v1/tasks", json=big, headers=auth())
            assert response.status_code == 422, response.text
            assert response.json()["error"]["code"] == "refused_by_store"
            assert "too large" in response.json()["error"]["message"]
            assert store.list_tasks() == []
    finally:
        store.close()
        broker.close()
        secantus_client.drop_database(database)
