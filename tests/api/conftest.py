from collections.abc import Iterator

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
