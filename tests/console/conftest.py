# The console's API-level tests use the API tests' app (SQLite store, in-process broker).
from tests.api.conftest import api  # noqa: F401
