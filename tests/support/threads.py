"""The threads baton starts are named "baton-..." (common, oss, modules): what a leak check counts."""

from __future__ import annotations

import threading

PREFIX = "baton-"


def baton_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(PREFIX) and t.is_alive()}
