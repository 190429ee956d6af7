"""State built on first use and then shared by several threads: a second thread that arrives
while the first is still building must get a finished thing, never a half-made one.

Each test widens the window deterministically: the builder is made to wait, inside its build,
until the second thread has had its go (or a bound time passed, when the fix makes the second
thread wait for the builder instead)."""

from __future__ import annotations

import dis
import json
import sys
import threading
from collections.abc import Callable

from common.secrets.scrubber import MASK, Scrubber

WINDOW = 2.0  # seconds the builder holds its build open for the other thread at most


def test_a_scrubber_shared_by_threads_masks_in_each_while_its_automaton_is_built(monkeypatch):
    """A step's Scrubber (its secret values) is in every context copied from the step's: the
    command's thread, the store thread that commits, threads the command starts. The automaton is
    built when a line first quotes a secret inside longer text; a line logged on another thread
    meanwhile must still have every secret masked, and must not fail."""
    # More secrets than the direct search handles, and one that starts inside another ("bcd" in
    # "abcd…"): found only through the automaton's failure links, which are made last.
    secrets = ["xabcq", "bcd", *(f"other-secret-{n}" for n in range(10))]
    scrubber = Scrubber(secrets)
    building, other_done = threading.Event(), threading.Event()
    link = Scrubber._link

    def slow_link(automaton):  # the first builder stops before its failure links, until the other went
        if not building.is_set():
            building.set()
            other_done.wait(WINDOW)
        link(automaton)

    monkeypatch.setattr(Scrubber, "_link", staticmethod(slow_link))
    seen: dict[str, object] = {}

    def first() -> None:
        seen["first"] = scrubber.text("error: password xabcq refused")

    def second() -> None:
        building.wait(WINDOW)
        try:
            seen["second"] = scrubber.text("error: password xabcd refused")
        except Exception as exc:  # noqa: BLE001 - what the thread raised is the finding
            seen["second"] = repr(exc)
        other_done.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"first": f"error: password {MASK} refused", "second": f"error: password xa{MASK} refused"}


class _HeldStores:
    """Holds a thread before each attribute store in HotPathLogger.__getattr__ (opcode tracing):
    the only way to stop a thread between two stores that run no Python code of their own."""

    def __init__(self) -> None:
        from common.logging import HotPathLogger

        self._code = HotPathLogger.__getattr__.__code__
        self._stores = {i.offset for i in dis.get_instructions(self._code) if i.opname == "STORE_ATTR"}
        self.gates: dict[str, Callable[[int], None]] = {}  # thread name -> called before its n-th store

    def run(self, name: str, fn: Callable[[], None]) -> threading.Thread:
        count = [0]

        def trace(frame, event, _arg):
            if frame.f_code is not self._code:
                return None
            frame.f_trace_opcodes = True
            if event == "opcode" and frame.f_lasti in self._stores:
                count[0] += 1
                self.gates[name](count[0])
            return trace

        def body() -> None:
            sys.settrace(trace)
            try:
                fn()
            finally:
                sys.settrace(None)

        thread = threading.Thread(target=body, name=name)
        thread.start()
        return thread


def test_a_hot_path_logger_assembled_by_two_threads_across_a_reconfiguration_follows_the_new_one(capsys):
    """Two threads assemble a hot-path logger at once, one under the configuration that was, the
    other under the one that replaced it (a test's capture_logs while a module's threads log): it
    must end up following the configuration in place, never keep the older one's logger marked
    as the newer one's."""
    from common.logging import HotPathLogger, configure_logging

    log = HotPathLogger("raced")
    held = _HeldStores()
    old_may_store, new_between, new_may_go = threading.Event(), threading.Event(), threading.Event()
    old_holding = threading.Event()

    def old_gate(n: int) -> None:  # the thread of the old configuration stores after the new one began
        old_holding.set()
        old_may_store.wait(WINDOW)

    def new_gate(n: int) -> None:  # the new one pauses between its stores, if it makes more than one
        if n > 1:
            new_between.set()
            new_may_go.wait(WINDOW)

    held.gates = {"old": old_gate, "new": new_gate}
    try:
        configure_logging("console", "info")
        old = held.run("old", lambda: log.info("under the old configuration"))
        assert old_holding.wait(WINDOW)
        configure_logging("json", "info")
        new = held.run("new", lambda: (log.info("under the new configuration"), new_between.set()))
        assert new_between.wait(WINDOW)  # held between its stores, or done if it makes one
        old_may_store.set()
        old.join()
        new_may_go.set()
        new.join()
        capsys.readouterr()
        log.info("after both")
        [line] = capsys.readouterr().err.splitlines()
    finally:
        configure_logging()
    assert json.loads(line)["event"] == "after both"  # the JSON configuration's line


def test_a_connection_a_thread_opens_while_its_store_closes_is_closed_too(tmp_path, monkeypatch):
    """A thread's first use of a SQLite store opens its connection; the store closed meanwhile
    (the process stopping) must not leave that one open and in the thread's hands: close() would
    have missed it, and a store used after its close can crash the process."""
    from common.errors import StoreClosed
    from common.store.sqlite import connections
    from common.store.sqlite.connections import LocalConnections

    conns = LocalConnections(str(tmp_path / "t.db"), "CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    connecting, closed = threading.Event(), threading.Event()
    connect = connections.connect

    def slow_connect(path: str):  # the thread is past the "closed?" look, opening its connection
        connecting.set()
        closed.wait(WINDOW)
        return connect(path)

    monkeypatch.setattr(connections, "connect", slow_connect)
    got: list[object] = []

    def first_use() -> None:
        try:
            got.append(conns.get())
        except StoreClosed as exc:
            got.append(exc)

    thread = threading.Thread(target=first_use)
    thread.start()
    assert connecting.wait(WINDOW)
    conns.close()
    closed.set()
    thread.join()
    [answer] = got
    assert isinstance(answer, StoreClosed), answer
    assert conns.open_count() == 0


def test_an_attempt_asking_for_its_callback_token_on_two_threads_at_once_gets_one_token():
    """`ctx.callback_token()` gives the same token for every call of one attempt. An async
    command gathering two `callback_token_async()` asks on two executor threads at once: the
    second must get the first's token, not register one of its own (which the store refuses:
    the run has its token already, and the command fails for good)."""
    import asyncio

    from common.engine.states import Phase
    from common.runtime.registry import CommandContext

    second_in, registered = threading.Event(), []

    def open_callback(task_id: str, dispatch_id: str, owner: str, hashed: str) -> None:
        if not registered:  # the first registration is held until the other caller came in
            registered.append(hashed)
            second_in.wait(WINDOW)
            return
        second_in.set()
        registered.append(hashed)

    ctx = CommandContext(task_id="t" * 32, task_type="change", module="tickets", command="give", cursor=1,
                         phase=Phase.NORMAL, attempt=1, idempotency_key="k", parameters={}, dispatch_id="d1",
                         owner="w", open_callback=open_callback)
    # The other caller, waiting for the first's token, lets the first go on.
    object.__setattr__(ctx, "_token_lock", _SeenWhenContended(second_in))

    async def both() -> list[str]:
        return list(await asyncio.gather(ctx.callback_token_async(), ctx.callback_token_async()))

    first, second = asyncio.run(both())
    assert first == second and len(registered) == 1


class _SeenWhenContended:
    """A lock that tells when a thread finds it held (then waits for it as usual)."""

    def __init__(self, seen: threading.Event):
        self._lock = threading.Lock()
        self._seen = seen

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            self._seen.set()
            self._lock.acquire()

    def __exit__(self, *_: object) -> None:
        self._lock.release()
