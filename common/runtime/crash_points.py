"""Injected crashes (tests, drills): SIGKILL this module process at a named point of the
protocol (common/runtime/faults.py lists the points), when fault injection is on."""

from __future__ import annotations

import os
import signal
import threading

import structlog

from common.engine.document import StepMessage
from common.runtime.faults import BadFaultRule, faults_for

log = structlog.get_logger(__name__)


def crash_point(enabled: bool, parameters: dict, message: StepMessage, point: str, delay: float = 0.0) -> None:
    if not enabled:
        return
    try:
        faults = faults_for(parameters, message.Command, message.Type, message.Attempt)
    except BadFaultRule:
        return  # the command itself reports the bad rule as its failure
    if any(f.action == "crash" and f.at == point for f in faults):
        log.warning("injected crash", point=point)
        if delay:
            threading.Timer(delay, os.kill, (os.getpid(), signal.SIGKILL)).start()
        else:
            os.kill(os.getpid(), signal.SIGKILL)
