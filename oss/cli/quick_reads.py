"""`baton list` and `baton get` straight from a SQLite file's stored JSON: no settings classes, no document
model, no adapter (each costs a tenth of a second or more of a command's start, pydantic's
schema building for the most part, where the answer itself takes milliseconds).

It serves the common case only, and says None to anything else, which the command then serves
the full way (oss.cli.common.settings, the store adapter, the document model): a store that is
not SQLite; settings that need the full reader (BATON_CONFIG_FILE, a BATON_ variable written in
another case, BATON_LOG_LEVEL set); a file whose schema or documents this reader does not know.
A read command reads only BATON_STORE_URL here: an unrelated setting with a bad value is the
business of the processes that use it.

The listing and the masking are the store's and the views' own (common.store.tasks.filters,
common.secrets.task_views.masked_doc): the same SQL and the same masks as the full way.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping
from typing import Any

from common.store.tasks.filters import TaskFilter, sql_where
from common.store.urls import DEFAULT_STORE_URL, sqlite_path, url_scheme

# The variables the full reader would read differently: a file of settings, and log set-up.
_FULL_READER = ("BATON_CONFIG_FILE", "BATON_LOG_LEVEL")
_ROW = "task_id, task_type, status, time_create, doc"


def sqlite_file(environ: Mapping[str, str] = os.environ) -> str | None:
    """The SQLite file BATON_STORE_URL names, when this reader may serve; None otherwise."""
    if any(environ.get(name, "").strip() for name in _FULL_READER):
        return None
    # pydantic-settings matches variable names in any case: leave such an environment to it.
    if any(key.upper().startswith("BATON_") and not key.startswith("BATON_") for key in environ):
        return None
    url = store_url(environ)
    if url_scheme(url) != "sqlite":  # a bad URL raises ConfigError, as the settings would
        return None
    return sqlite_path(url)


def store_url(environ: Mapping[str, str] = os.environ) -> str:
    return environ.get("BATON_STORE_URL", DEFAULT_STORE_URL)


def list_rows(path: str, task_filter: TaskFilter, limit: int) -> list[dict[str, Any]] | None:
    """The masked documents of a listing's page (newest first, `limit` of them), or None when
    this reader cannot tell (an old schema or document format: the full way upgrades them)."""
    from common.secrets.task_views import masked_doc

    where, params = sql_where(task_filter)
    try:
        conn = _connect(path)
        try:
            rows = conn.execute(f"SELECT {_ROW} FROM tasks {where} ORDER BY time_create DESC, task_id DESC LIMIT ?",
                                (*params, limit)).fetchall()  # fmt: skip
        finally:
            conn.close()
        docs = [json.loads(row[4]) for row in rows]
    except (sqlite3.Error, ValueError):
        return None
    from oss.cli.render_doc import is_plain

    # The first document format (an `Active` run) is upgraded by the document model. A task in
    # flight that is not plain may be held by a gate (a wait, a delayed start, a drained module),
    # which only the gates can tell: the listing then notes it the full way.
    if any("Active" in doc or not isinstance(doc.get("TaskMessage"), str)
           or (doc.get("TaskStatus") in (1, 2) and not is_plain(doc)) for doc in docs):  # fmt: skip
        return None
    return [masked_doc(doc) for doc in docs]


def task_doc(path: str, task_id: str) -> tuple[bool, dict[str, Any] | None]:
    """Whether this reader could tell, and the task's masked document (None: no such task)."""
    from common.secrets.task_views import masked_doc

    try:
        conn = _connect(path)
        try:
            row = conn.execute("SELECT doc FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        finally:
            conn.close()
        doc = None if row is None else json.loads(row[0])
    except (sqlite3.Error, ValueError):
        return False, None
    if doc is not None and ("Active" in doc or not isinstance(doc.get("Steps"), list)):
        return False, None  # the first document format: the document model upgrades it
    return True, None if doc is None else masked_doc(doc)


def _connect(path: str) -> sqlite3.Connection:
    """The file as it is, never created (mode=rw): oss.cli.common.require_store said it exists."""
    conn = sqlite3.connect(f"file:{_uri_path(path)}?mode=rw", uri=True, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 10000")  # a writer holding the lock: wait as the store does
    return conn


def _uri_path(path: str) -> str:
    from urllib.parse import quote

    return quote(os.path.abspath(path))
