"""A callback token: `<task id>.<secret>`. The task id lets the route read one document with no
index; the secret (256 random bits) proves the caller. Only the SHA-256 of the whole token is
stored; the token is never logged."""

from __future__ import annotations

import hashlib
import re
import secrets

# A task id (baton makes a uuid4's hex; a test or an import may name its own), a dot, then
# token_urlsafe(32)'s 43 characters, which hold no dot.
_SHAPE = re.compile(r"(?P<task>[A-Za-z0-9_.:-]{1,128})\.[A-Za-z0-9_-]{43}")


def new_token(task_id: str) -> str:
    return f"{task_id}.{secrets.token_urlsafe(32)}"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def task_of(token: str) -> str | None:
    """The task a well-formed token names, or None: the token is not one baton made."""
    found = _SHAPE.fullmatch(token)
    return found["task"] if found else None
