from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.support import Api, open_api
from tests.support.threads import no_baton_thread_outlives_the_module  # noqa: F401  (why: that module)


@pytest.fixture
def api(tmp_path) -> Iterator[Api]:
    app, store, broker = open_api(tmp_path)
    with TestClient(app) as client:
        yield Api(client, store, broker)
    store.close()
    broker.close()


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> dict[str, Any]:
    """The OpenAPI document an `api` app serves: built once per module, as it depends on the code,
    the flows and the settings only, which every `api` shares. An app generates it at its first
    asking, a third of a CPU second: once per test, it was a large share of the API walks."""
    app, store, broker = open_api(tmp_path_factory.mktemp("published"))
    with TestClient(app) as client:
        document: dict[str, Any] = client.get("/api/v1/openapi.json").json()
    store.close()
    broker.close()
    return document
