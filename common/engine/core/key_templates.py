"""Key templates over a task's parameters ("cluster:{cluster}"), shared by every gate that keys a
table by one (a lock's, a rate's): the names a template uses, and the key a task's parameters
make of it. A key is shown (API, console, logs) and is the identity of its table's row, so a
secret part is a digest and a key has a bounded length. Pure."""

from __future__ import annotations

import hashlib
import string
from collections.abc import Collection
from typing import Any

from common.input_limits import escaped
from common.secrets.documents import mask_secrets
from common.secrets.names import SECRET_KEY


# The longest key: what `GET /api/v1/locks?key=` takes, so that every key the table lists can be
# looked up. A template longer than this is refused at load; a key longer at submission too.
MAX_KEY_LENGTH = 256
# A key made longer at run time (an item's, or from a step's output) keeps this much of its start
# and a digest of the whole: it still locks exactly the same rendered keys together.
_KEPT_OF_LONG_KEY = 200


class LockKeyError(ValueError):
    """A lock key template names a parameter the task does not have."""


class LockKeyTooLong(LockKeyError):
    """The key these parameters make is longer than MAX_KEY_LENGTH. A submission is refused;
    what runs already locks by `bounded`: the key's start and a digest of the whole."""

    def __init__(self, template: str, key: str):
        self.bounded = key[:_KEPT_OF_LONG_KEY] + "…sha256:" + hashlib.sha256(key.encode()).hexdigest()[:16]
        super().__init__(f"the lock key {template!r} makes a key of {len(key)} characters, more than {MAX_KEY_LENGTH}")


def template_fields(template: str) -> list[str]:
    """The parameter names `{name}` in a key template; ValueError when it is not one."""
    names = []
    for _, field, spec, conversion in string.Formatter().parse(template):
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            raise ValueError(f"{{{field}}}: a placeholder is a parameter name only, like {{cluster}}")
        names.append(field)
    return names


def render_key(template: str, parameters: dict[str, Any], secret: Collection[str] = ()) -> str:
    """The key of these parameters. A key is shown (API, console, logs) and is the lock's
    identity, so a part that is secret is the digest of its value: one `secret` names (declared
    secret, or the `item` of a secret list), one named like a secret, or a value that holds
    one (a URL with a password, a mapping with a secret-looking key). The loader refuses
    templates that name a secret where it can tell; this covers what only a submission shows."""
    missing = [name for name in template_fields(template) if name not in parameters]
    if missing:
        raise LockKeyError(f"the lock key {template!r} needs parameter {missing[0]!r}")
    key = template.format_map({name: _part(name, parameters[name], secret) for name in template_fields(template)})
    if len(key) > MAX_KEY_LENGTH:
        raise LockKeyTooLong(template, key)
    return key


def _part(name: str, value: Any, secret: Collection[str]) -> str:
    """A value as its part of a key. Control and invisible characters are written as escapes: a
    key is a name (GET /locks?key= takes no newline, NUL or bidi control) and is shown on one line."""
    text = value if isinstance(value, str) else str(_canonical(value))
    if name in secret or SECRET_KEY.search(name) or mask_secrets(value) != value:
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return escaped(text)


def _canonical(value: Any) -> Any:
    """One value, one spelling: JSON's 3 and 3.0 are one number, and a mapping is the same in
    any key order. Else two tasks on one shard would make two keys, and both hold an exclusive
    lock. What was already canonical (an int, a mapping in key order) is written as before."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:  # past it, 1e+300 stays short
        return int(value)
    if isinstance(value, dict):
        return {key: _canonical(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    return value
