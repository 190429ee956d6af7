"""Namespaces of a scoped API token (docs/design/access.md): pure values and decisions, no I/O.

A namespace holds the tasks of some task types and/or with some labels. A token limited to
namespaces has a role in each; its role on a task is the highest of the namespaces the task is
in. The store translates a Scope into its query (common/store/tasks/filters.py), so listings and
counts stay inside it; the API decides with `role_on` for a task it read by id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Role = Literal["read", "submit", "operator"]
ROLES: tuple[Role, ...] = ("read", "submit", "operator")  # each may do what those before it may


def at_least(role: Role, needed: Role) -> bool:
    return ROLES.index(role) >= ROLES.index(needed)


@dataclass(frozen=True)
class Namespace:
    name: str
    role: Role
    task_types: frozenset[str] = frozenset()  # empty: any task type
    labels: Mapping[str, str] = field(default_factory=dict)  # every pair must match

    def holds(self, task_type: str, labels: Mapping[str, str]) -> bool:
        if self.task_types and task_type not in self.task_types:
            return False
        return all(labels.get(key) == value for key, value in self.labels.items())

    def may_hold_type(self, task_type: str) -> bool:
        """Whether some task of this type can be in the namespace (with the right labels)."""
        return not self.task_types or task_type in self.task_types


Scope = tuple[Namespace, ...]  # a task is in scope when it is in one of them; () holds nothing


def role_on(scope: Scope, task_type: str, labels: Mapping[str, str]) -> Role | None:
    """The highest role of the namespaces holding such a task; None: it is outside the scope."""
    roles = [ns.role for ns in scope if ns.holds(task_type, labels)]
    return max(roles, key=ROLES.index) if roles else None


def with_role(scope: Scope, role: Role) -> Scope:
    """The namespaces where the token has `role` or more: what a listing for that role covers."""
    return tuple(ns for ns in scope if at_least(ns.role, role))


def may_hold_type(scope: Scope, task_type: str) -> bool:
    return any(ns.may_hold_type(task_type) for ns in scope)


def labels_asked(scope: Scope, task_type: str, role: Role) -> list[dict[str, str]]:
    """The label selectors under which a task of this type would be in a namespace giving
    `role` (what a refused submission is told to add)."""
    return [dict(ns.labels) for ns in with_role(scope, role) if ns.may_hold_type(task_type)]
