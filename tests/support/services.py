"""Reaching the machine's shared services without stepping on anyone else's toes.

A test that needs a service skips on a laptop without it, and FAILS under CI=true: CI must never
report green because the broker was down.
"""

from __future__ import annotations

import contextlib
import os
import socket

import pytest

RABBITMQ_HOST = os.environ.get("BATON_TEST_RABBITMQ_HOST", "127.0.0.1")
RABBITMQ_PORT = int(os.environ.get("BATON_TEST_RABBITMQ_PORT", "5672"))


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(condition: bool, why: str) -> None:
    """Skip the test when `condition` is false, except in CI where that is a failure."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"required service missing under CI: {why}")
    pytest.skip(why)


def require_usable(configured: bool, usable: bool, why: str) -> None:
    """A service the run was told to use (an address in the environment, a package installed)
    but that does not work is a failure, never a skip: the run would look green without it.
    One nobody configured skips, as `require` does (and fails under CI=true)."""
    if usable:
        return
    if configured:
        pytest.fail(f"configured but unusable: {why}")
    require(False, why)


def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout):
        return True
    return False
