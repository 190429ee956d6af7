"""The client's tests run this checkout's client (client/baton_client), as every other tier runs
this checkout's baton: an installed copy (`make venv` installs ./client editable, in whichever
checkout made the environment) must not stand in for the code under test."""

import sys
from pathlib import Path

from tests.support.threads import no_baton_thread_outlives_the_module  # noqa: F401  (tests/support/threads.py says why)

CLIENT = Path(__file__).resolve().parents[2] / "client"
if str(CLIENT) not in sys.path:
    sys.path.insert(0, str(CLIENT))
loaded = sys.modules.get("baton_client")
if loaded is not None and not str(getattr(loaded, "__file__", "")).startswith(str(CLIENT)):
    for name in [m for m in sys.modules if m == "baton_client" or m.startswith("baton_client.")]:
        del sys.modules[name]  # imported from elsewhere before this ran: read again from the checkout
