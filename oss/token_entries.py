"""BATON_API_TOKENS in its JSON form: a list of entries, each unscoped (`role`) or scoped
(`namespaces`, docs/design/access.md). Every refusal names the entry (number and name), the
field and the value at fault, never the token."""

from __future__ import annotations

import json
import re
from typing import Any

from common.labels import is_label_key
from common.access import ROLES, Namespace

NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
ENTRY_KEYS = frozenset({"name", "token", "role", "namespaces"})
NAMESPACE_KEYS = frozenset({"name", "task_types", "labels", "role"})
MAX_NAMESPACES = 64


def json_entries(text: str) -> list[tuple[str, str, str | None, tuple[Namespace, ...] | None]]:
    """(name, token, role or None, namespaces or None) of each entry; ValueError says what is wrong."""
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(entries, list):
        raise ValueError("the JSON form is a list of entries")
    return [_entry(number, entry) for number, entry in enumerate(entries, start=1)]


def _entry(number: int, entry: Any) -> tuple[str, str, str | None, tuple[Namespace, ...] | None]:
    if not isinstance(entry, dict):
        raise ValueError(f"entry {number}: must be an object with name, token and role or namespaces")
    name = entry.get("name")
    where = f"entry {number}" + (f" ({name})" if isinstance(name, str) and NAME.fullmatch(name) else "")
    if unknown := sorted(set(entry) - ENTRY_KEYS):
        raise ValueError(f"{where}: unknown field {unknown[0]!r} (allowed: name, token, role, namespaces)")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"{where}: name: must be 1-64 letters, digits, _.@- (got {name!r})")
    token = entry.get("token")
    if not isinstance(token, str):
        raise ValueError(f"{where}: token: must be a string")  # its value is never shown
    has_role, has_namespaces = "role" in entry, "namespaces" in entry
    if has_role == has_namespaces:
        raise ValueError(f"{where}: give either role (every task) or namespaces (only theirs), not "
                         f"{'both' if has_role else 'neither'}")  # fmt: skip
    if has_role:
        return name, token, _role(f"{where}: role", entry["role"]), None
    namespaces = entry["namespaces"]
    if not isinstance(namespaces, list) or not 1 <= len(namespaces) <= MAX_NAMESPACES:
        raise ValueError(f"{where}: namespaces: must be a list of 1 to {MAX_NAMESPACES} namespaces")
    found = tuple(_namespace(f"{where}: namespaces[{i}]", ns) for i, ns in enumerate(namespaces))
    names = [ns.name for ns in found]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise ValueError(f"{where}: namespaces: the name {twice[0]!r} is used twice")
    return name, token, None, found


def _namespace(where: str, given: Any) -> Namespace:
    if not isinstance(given, dict):
        raise ValueError(f"{where}: must be an object with name, role and task_types and/or labels")
    if unknown := sorted(set(given) - NAMESPACE_KEYS):
        raise ValueError(f"{where}: unknown field {unknown[0]!r} (allowed: name, task_types, labels, role)")
    name = given.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"{where}.name: must be 1-64 letters, digits, _.@- (got {name!r})")
    role = _role(f"{where}.role", given.get("role"))
    types = given.get("task_types", [])
    if not isinstance(types, list) or not all(isinstance(t, str) and t for t in types):
        raise ValueError(f"{where}.task_types: must be a list of task type names (got {types!r})")
    labels = given.get("labels", {})
    if not isinstance(labels, dict):
        raise ValueError(f"{where}.labels: must be an object of key: value (got {labels!r})")
    for key, value in labels.items():
        if not is_label_key(key):
            raise ValueError(f"{where}.labels: the key {key!r} is not a label key (letters, digits, _/-)")
        if not isinstance(value, str) or len(value) > 256 or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value):
            raise ValueError(f"{where}.labels.{key}: must be a string of up to 256 printable characters (got {value!r})")
    if not types and not labels:
        raise ValueError(f"{where}: give task_types and/or labels (a namespace of every task is an unscoped token)")
    return Namespace(name, role, frozenset(types), dict(labels))  # type: ignore[arg-type]


def _role(where: str, value: Any) -> str:
    if value not in ROLES:
        raise ValueError(f"{where}: must be read, submit or operator (got {value!r})")
    return value  # type: ignore[no-any-return]
