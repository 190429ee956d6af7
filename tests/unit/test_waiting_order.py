"""The order in which a module runs what it holds (common/runtime/waiting_line.py): in its inbox,
and parked for a slot of their kind. Priority first, then arrival; overdue ones first."""

from __future__ import annotations

from common.runtime.inbox import Inbox, TrackedDelivery
from common.runtime.slots import Slots
from common.runtime.waiting_line import WaitingLine, overtake_after


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Delivery:
    def __init__(self, body: str, priority: int):
        self.body, self.priority, self.redelivered = body, priority, False

    def ack(self) -> None: ...
    def dead_letter(self) -> None: ...
    def requeue(self) -> None: ...


def taken(line: WaitingLine[str]) -> list[str]:
    order = []
    while (item := line.take()) is not None:
        order.append(item)
    return order


def test_highest_priority_first_then_arrival_and_strict_for_good_without_an_overtake_age() -> None:
    clock = Clock()
    line: WaitingLine[str] = WaitingLine(None, clock)
    for n, (item, priority) in enumerate([("0a", 0), ("9a", 9), ("4a", 4), ("0b", 0), ("9b", 9), ("5a", 5)]):
        line.put(item, priority, arrived=clock.now + n)
    clock.now += 10**6
    assert len(line) == 6
    assert taken(line) == ["9a", "9b", "5a", "4a", "0a", "0b"]


def test_a_delivery_waiting_past_the_overtake_age_goes_before_higher_ones_oldest_first() -> None:
    """A steady stream of priority 9 does not hold a priority-0 delivery back for good."""
    clock = Clock()
    line: WaitingLine[str] = WaitingLine(60.0, clock)
    line.put("old 0", 0, arrived=clock.now)
    line.put("old 4", 4, arrived=clock.now + 1)
    for n in range(3):
        line.put(f"9-{n}", 9, arrived=clock.now + 2 + n)
    assert line.take() == "9-0"  # nothing overdue yet: priority
    clock.now += 60.0
    assert line.take() == "old 0"  # overdue, and the oldest
    assert line.take() == "9-1"  # "old 4" is not overdue yet (59 s)
    clock.now += 1.0
    assert line.take() == "old 4"
    line.put("new 9", 9, arrived=clock.now)
    assert taken(line) == ["9-2", "new 9"]  # overdue ones in arrival order, then priority


def test_overdue_is_half_the_hold_limit() -> None:
    assert overtake_after(300.0) == 150.0


def test_the_inbox_gives_back_and_drains_what_it_holds_in_any_band() -> None:
    clock = Clock()
    inbox = Inbox(overtake_after=30.0, clock=clock)
    inbox.put(_Delivery("early", 2), lambda _d: None)
    clock.now += 5
    inbox.put(_Delivery("late", 7), lambda _d: None)
    assert [d.inner.body for d in inbox.take_waiting_since(clock.now - 1)] == ["early"]
    assert len(inbox) == 1 and [d.inner.body for d in inbox.drain()] == ["late"] and len(inbox) == 0


def test_a_freed_slot_goes_to_the_highest_priority_parked_not_the_first_parked() -> None:
    clock = Clock()
    slots = Slots({"thread": 1}, overtake_after=100.0, clock=clock)

    def park(body: str, priority: int) -> TrackedDelivery:
        delivery = TrackedDelivery(_Delivery(body, priority), arrived=clock.now)
        clock.now += 1
        return delivery

    assert slots.admit("thread", park("running", 0), lambda: None)
    for body, priority in [("new task", 0), ("another new task", 0), ("urgent new task", 4), ("in flight", 5)]:
        assert not slots.admit("thread", park(body, priority), lambda: None)
    order = []
    while (parked := slots.release("thread")) is not None:
        order.append(parked.delivery.inner.body)
    assert order == ["in flight", "urgent new task", "new task", "another new task"]
    assert slots.in_use() == 0


def test_a_parked_delivery_overdue_takes_the_next_free_slot() -> None:
    clock = Clock()
    slots = Slots({"process": 1}, overtake_after=100.0, clock=clock)
    assert slots.admit("process", TrackedDelivery(_Delivery("running", 9), arrived=clock.now), lambda: None)
    assert not slots.admit("process", TrackedDelivery(_Delivery("waiting", 1), arrived=clock.now), lambda: None)
    clock.now += 100.0
    assert not slots.admit("process", TrackedDelivery(_Delivery("fresh", 9), arrived=clock.now), lambda: None)
    assert slots.release("process").delivery.inner.body == "waiting"
    assert [d.inner.body for d in slots.take_parked_since(clock.now + 1)] == ["fresh"]
