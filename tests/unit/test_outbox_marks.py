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


def test_the_unsent_entries_of_a_check_are_marked_at_once_when_the_owner_can():
    clock = Clock()
    timers = Timers(clock)
    batches: list[list[tuple[str, str]]] = []
    one_by_one: list[tuple[str, str]] = []
    marks = DeferredMarks(lambda b: {("t1", "d1"), ("t3", "d3")} & set(b), lambda t, d: one_by_one.append((t, d)),
                          timers, clock, delay=1.0, mark_many=batches.append)  # fmt: skip
    for n in (1, 2, 3):
        marks.add(f"t{n}", f"d{n}")
    clock.now += 1
    timers.fire_due()
    assert batches == [[("t1", "d1"), ("t3", "d3")]] and one_by_one == []


def test_a_publisher_writes_the_marks_of_a_check_in_one_call_to_its_store(tmp_path):
    import time

    from common.broker.inprocess import InProcessBroker
    from common.engine.core.entries import Timing, create_task
    from common.relay.outbox import OutboxPublisher
    from common.store.sqlite.tasks import SqliteStore
    from tests.support.builders import make_step

    class Counted(SqliteStore):
        def __init__(self, path):
            super().__init__(path)
            self.calls: list[str] = []

        def drop_sent(self, task_id, dispatch_id):
            self.calls.append("one")
            return super().drop_sent(task_id, dispatch_id)

        def drop_sent_many(self, entries):
            self.calls.append(f"many {len(entries)}")
            return super().drop_sent_many(entries)

    store, broker = Counted(tmp_path / "tasks.db"), InProcessBroker()
    broker.declare("mod")
    publisher = OutboxPublisher(store, broker, time.time, mark_delay=0.2)
    try:
        tasks = [create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(time.time()))
                 for _ in range(5)]  # fmt: skip
        for task in tasks:
            store.insert(task)
            publisher.flush(task)
        deadline = time.monotonic() + 10
        while any(store.get(t.TaskId).Outbox for t in tasks) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(store.get(t.TaskId).Outbox == [] for t in tasks)
        assert "one" not in store.calls  # each check's entries at once (the timer may split the five)
        assert sum(int(call.split()[1]) for call in store.calls) == 5
    finally:
        publisher.stop()
        broker.close()
