"""State built on first use and then shared by several threads: a second thread that arrives
while the first is still building must get a finished thing, never a half-made one.

Each test widens the window deterministically: the builder is made to wait, inside its build,
until the second thread has had its go (or a bound time passed, when the fix makes the second
thread wait for the builder instead)."""

from __future__ import annotations

import threading

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
