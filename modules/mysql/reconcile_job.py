"""The reconciler as a periodic job of the sweeper process (BATON_RECONCILE_INTERVAL_SECONDS > 0).

A dry run unless BATON_RECONCILE_APPLY=true: it logs what it would remove (one warning per item)
and what it reports. Several sweeper processes may run it: a lock in the store lets one at a time.
"""

from __future__ import annotations

import contextlib
import threading
import time

import structlog

from common.errors import BatonError
from common.settings import Settings
from common.module_hooks import module_hook
from common.store.tasks.port import TaskStore
from common.engine.changes import new_id
from modules.mysql.settings import load_mysql_settings
from modules.mysql.reconcile import Reconciler

log = structlog.get_logger(__name__)
LOCK_NAME = "reconciler"
PERIODIC_REASON = "periodic reconciler (BATON_RECONCILE_APPLY=true)"


def start_reconcile_job(settings: Settings, store: TaskStore, stop: threading.Event) -> threading.Thread | None:
    """Start the job in a thread; None (and nothing started) when it is off. The caller sets
    `stop` and joins the thread before it closes `store`: the thread's last act is to release its
    lock (so the next start's first run is not delayed by it) and close its inventory."""
    if settings.reconcile_interval_seconds <= 0:
        return None
    inventory = module_hook("inventory").open_configured_inventory(settings)  # the resource module's
    reconciler = Reconciler(store, inventory, load_mysql_settings())
    owner = f"reconciler-{new_id()[:8]}"
    interval, apply = settings.reconcile_interval_seconds, settings.reconcile_apply

    def run() -> None:
        log.info("reconciler started", interval=interval, apply=apply)
        try:
            while not stop.wait(interval):
                try:
                    if store.try_lock(LOCK_NAME, owner, time.time(), ttl=interval * 2 + 60):
                        run_once(reconciler, apply)
                except BatonError as exc:
                    log.warning("reconcile failed", error=str(exc))
        finally:
            with contextlib.suppress(BatonError):  # the store is down: the lock's ttl frees it
                store.release_lock(LOCK_NAME, owner)
            inventory.close()
            log.info("reconciler stopped")

    thread = threading.Thread(target=run, name="baton-reconciler", daemon=True)
    thread.start()
    return thread


def run_once(reconciler: Reconciler, apply: bool) -> None:
    survey = reconciler.survey()
    for problem in survey.problems:
        log.warning("reconcile could not read", problem=problem)
    for finding in survey.plan.findings:
        log.warning("reconcile finding", kind=finding.kind, target=finding.target, task_id=finding.task_id,
                    why=finding.why)  # fmt: skip
    if not apply:
        for action in survey.plan.actions:
            log.warning("reconcile would act (dry run)", kind=action.kind, target=action.target,
                        task_id=action.task_id, why=action.why)  # fmt: skip
        return
    reconciler.apply(survey.plan.actions, PERIODIC_REASON)  # each action logs what it did, and why
