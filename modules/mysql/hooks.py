"""What the mysql module offers oss (found by common.module_hooks.module_hooks): its
reconciler, for `baton reconcile`, and the periodic reconcile job the sweeper process runs."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from common.settings import Settings
from common.store.tasks.port import TaskStore
from modules.mysql.reconcile import Reconciler
from modules.mysql.reconcile_job import start_reconcile_job
from modules.mysql.settings import load_mysql_settings

if TYPE_CHECKING:  # the resource module's, reached through its hook (common.module_hooks)
    from modules.resource.inventory import Inventory


def reconciler(store: TaskStore, inventory: Inventory, actor: str) -> Reconciler:
    """ConfigError: a bad BATON_MYSQL_* setting."""
    return Reconciler(store, inventory, load_mysql_settings(), actor=actor)


def background_job(settings: Settings, store: TaskStore, stop: threading.Event) -> threading.Thread | None:
    return start_reconcile_job(settings, store, stop)


HOOKS: dict[str, Any] = {"reconciler": reconciler, "background_job": background_job}
