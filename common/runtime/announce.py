"""A module process announces itself in the store: its module, commands (and the kind of each:
process, thread or async), version and worker id,
renewed every BATON_MODULE_HEARTBEAT_SECONDS, withdrawn when it stops cleanly. What reads them:
`GET /api/v1/modules`, `baton modules`, `baton check-flows --live`, the sweeper's unserved-queue
alarm. A store that fails for a while only delays a renewal: announcing never stops a module.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Mapping
from importlib import metadata

import structlog

from common.errors import BatonError
from common.store.side.modules import ModuleRegistration, ModuleRegistry

log = structlog.get_logger(__name__)


def baton_version() -> str:
    try:
        return metadata.version("baton")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


class Announcer:
    def __init__(self, registry: ModuleRegistry, worker_id: str, module: str, commands: Mapping[str, str],
                 version: str, period: float, clock: Callable[[], float]):  # fmt: skip
        self._registry = registry
        self._period = period
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._registration = ModuleRegistration(
            WorkerId=worker_id, Module=module, Commands=sorted(commands), Kinds=dict(commands), Version=version,
            Host=socket.gethostname(), Pid=os.getpid(), StartedAt=clock(), HeartbeatAt=clock(),
        )  # fmt: skip

    def start(self) -> None:
        self._announce()
        self._thread = threading.Thread(target=self._renew, name="baton-announce", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Withdraw: a clean stop leaves no registration behind."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            self._registry.withdraw(self._registration.WorkerId)
        except BatonError as exc:
            log.warning("could not withdraw the module's announcement", error=str(exc))
        self._registry.close()

    def _renew(self) -> None:
        while not self._stop.wait(self._period):
            self._announce()

    def _announce(self) -> None:
        registration = self._registration.model_copy(update={"HeartbeatAt": self._clock()})
        try:
            self._registry.announce(registration)
        except BatonError as exc:
            log.warning("could not announce the module", module=registration.Module, error=str(exc))
