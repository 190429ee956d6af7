"""Deferred mark-sents are checked a batch at a time: one query for every entry that came due,
each entry after its full delay, and only the entries no claim removed are marked."""

from __future__ import annotations

from collections.abc import Callable

from common.relay.outbox_marks import DeferredMarks


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Timers:
    """Runs nothing by itself: the test fires what is due."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.waiting: list[tuple[float, Callable[[], object]]] = []

    def at(self, due: float, callback: Callable[[], object]) -> None:
        self.waiting.append((due, callback))

    def fire_due(self) -> None:
        due = [w for w in self.waiting if w[0] <= self.clock.now]
        self.waiting = [w for w in self.waiting if w[0] > self.clock.now]
        for _, callback in due:
            callback()


def test_one_query_per_batch_and_only_unsent_entries_are_marked():
    clock = Clock()
    timers = Timers(clock)
    queries: list[list[tuple[str, str]]] = []
    marked: list[tuple[str, str]] = []
    still_there = {("t2", "d2")}

    def in_outbox(batch):
        queries.append(list(batch))
        return still_there & set(batch)

    marks = DeferredMarks(in_outbox, lambda t, d: marked.append((t, d)), timers, clock, delay=1.0)
    for n in (1, 2, 3):
        marks.add(f"t{n}", f"d{n}")
    clock.now += 0.5
    marks.add("t4", "d4")  # due half a second after the others
    clock.now += 0.5
    timers.fire_due()
    assert queries == [[("t1", "d1"), ("t2", "d2"), ("t3", "d3")]]  # not t4: its delay has not passed
    assert marked == [("t2", "d2")]
    clock.now += 0.5
    timers.fire_due()
    assert queries[-1] == [("t4", "d4")] and marked == [("t2", "d2")]
    assert timers.waiting == []  # nothing left, nothing scheduled


def test_a_failed_check_leaves_the_entries_to_the_relay_and_later_ones_still_run():
    from common.errors import StoreError

    clock = Clock()
    timers = Timers(clock)
    calls = {"n": 0}

    def in_outbox(batch):
        calls["n"] += 1
        if calls["n"] == 1:
            raise StoreError("down")
        return set(batch)

    marked: list[tuple[str, str]] = []
    marks = DeferredMarks(in_outbox, lambda t, d: marked.append((t, d)), timers, clock, delay=1.0)
    marks.add("t1", "d1")
    clock.now += 1
    timers.fire_due()
    marks.add("t2", "d2")
    clock.now += 1
    timers.fire_due()
    assert marked == [("t2", "d2")]


def test_a_steady_stream_of_entries_is_checked_in_batches_not_one_query_each():
    clock = Clock()
    timers = Timers(clock)
    queries: list[list[tuple[str, str]]] = []
    marks = DeferredMarks(lambda b: queries.append(list(b)) or set(), lambda t, d: None, timers, clock, delay=1.0)
    for n in range(40):  # one entry every 0.1 s for 4 s
        marks.add(f"t{n}", f"d{n}")
        clock.now += 0.1
        timers.fire_due()
    clock.now += 2
    timers.fire_due()
    assert sum(len(q) for q in queries) == 40
    assert len(queries) <= 10  # about one query per half delay
