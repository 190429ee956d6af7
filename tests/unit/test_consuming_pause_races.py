"""A module pauses consuming when deliveries wait past the hold limit (its watcher thread) and
resumes when a slot frees (the end of any command, on a store thread). The two run at once: the
subscriptions must end up as the flag says, and a pause must never outlast every command."""

from __future__ import annotations

import threading

import pytest

from common.broker.inprocess import InProcessBroker
from common.runtime.module import ModuleRuntime
from common.settings import load_settings
from common.store.sqlite.tasks import SqliteStore

WINDOW = 2.0  # seconds a held call waits for the other thread at most


class _Subscription:
    """Stands for a broker subscription: whether it consumes, and a pause that waits for `go`."""

    def __init__(self, go: threading.Event):
        self.consuming = True
        self.pausing = threading.Event()
        self._go = go

    def pause(self) -> None:
        self.pausing.set()
        self._go.wait(WINDOW)
        self.consuming = False

    def resume(self) -> None:
        self.consuming = True
        self._go.set()


class _SeenWhenContended:
    """The runtime's pause lock, telling when a thread finds it held (then waits for it as usual)."""

    def __init__(self, seen: threading.Event):
        self._lock = threading.Lock()
        self._seen = seen

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            self._seen.set()
            self._lock.acquire()

    def __exit__(self, *_: object) -> None:
        self._lock.release()


@pytest.fixture
def runtime(tmp_path):
    store = SqliteStore(str(tmp_path / "baton.db"))
    broker = InProcessBroker()
    made = ModuleRuntime(registry_ref="modules.mysql.commands:registry", settings=load_settings(concurrency=1),
                         store=store, broker=broker)  # never started: its watcher and slots are driven here
    yield made
    made._dispatcher.close()  # its store threads (stop() would also stop what was never started)
    made._publisher.stop()
    broker.close()
    store.close()


def test_a_resume_while_a_pause_is_applied_leaves_the_subscriptions_as_the_flag_says(runtime):
    go = threading.Event()
    subscription = _Subscription(go)
    runtime._subscriptions = [subscription]
    runtime._pause_lock = _SeenWhenContended(go)  # a resume waiting for the pause lets it finish
    pausing = threading.Thread(target=runtime._pause)
    pausing.start()
    assert subscription.pausing.wait(WINDOW)  # the watcher is in the middle of pausing
    resuming = threading.Thread(target=runtime._resume_if_idle)  # a command ended meanwhile
    resuming.start()
    pausing.join()
    resuming.join()
    assert (runtime._paused, subscription.consuming) == (False, True)


class _Delivery:
    body, redelivered, priority = b"{}", False, 0

    def __init__(self) -> None:
        self.requeued = False

    def requeue(self) -> None:
        self.requeued = True


def test_deliveries_given_back_when_no_command_runs_any_more_do_not_pause_consuming(runtime):
    """The watcher found deliveries waiting past the hold limit, and the last running command
    ended before it paused: no later end would resume, so it must not pause."""
    subscription = _Subscription(threading.Event())
    subscription._go.set()
    runtime._subscriptions = [subscription]
    waiting = _Delivery()
    runtime._inbox.put(waiting, lambda delivery: None)
    assert runtime._dispatcher.slots.in_use() == 0
    runtime._give_back_waiting(limit=-1.0)  # everything in the inbox has waited past it
    assert waiting.requeued
    assert (runtime._paused, subscription.consuming) == (False, True)
