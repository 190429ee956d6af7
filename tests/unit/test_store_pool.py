"""The module's store threads (common/runtime/store_pool.py): commits before waiting claims."""

from __future__ import annotations

import threading
import time

import pytest

from common.runtime.store_pool import StorePool


def test_a_commit_goes_ahead_of_the_claims_waiting():
    pool = StorePool(1)
    busy, release, ran = threading.Event(), threading.Event(), []
    done = threading.Event()
    try:
        pool.submit(lambda: (busy.set(), release.wait(10)))
        assert busy.wait(10)
        for n in range(3):
            pool.submit(lambda n=n: ran.append(f"claim {n}"))
        pool.submit(lambda: ran.append("commit"), commit=True)
        pool.submit(done.set)
        release.set()
        assert done.wait(10)
        assert ran == ["commit", "claim 0", "claim 1", "claim 2"]
    finally:
        release.set()
        pool.shutdown()


def test_a_failing_job_is_logged_and_its_thread_goes_on(capsys):
    pool = StorePool(1)
    done = threading.Event()
    try:
        pool.submit(lambda: 1 / 0)
        pool.submit(done.set)
        assert done.wait(10)
    finally:
        pool.shutdown()
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_shutdown_drops_what_waits_lets_the_running_job_end_and_refuses_more():
    pool = StorePool(1)
    started, release, ran = threading.Event(), threading.Event(), []
    pool.submit(lambda: (started.set(), release.wait(10), ran.append("running")))
    assert started.wait(10)
    pool.submit(lambda: ran.append("waiting"))
    closer = threading.Thread(target=pool.shutdown)
    closer.start()
    while not pool._closed:  # the waiting job is dropped before the running one ends
        time.sleep(0.01)
    release.set()
    closer.join(10)
    assert ran == ["running"]
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)
