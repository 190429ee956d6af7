"""The RabbitMQ publisher's pure parts: matching confirms and returns to publishes, and the inbox
that hands calls to its I/O thread. No broker needed."""

import pika
import pytest

from common.broker.rabbitmq.calls import Inbox, Operation, Publish
from common.broker.rabbitmq.confirms import ConfirmTracker
from common.errors import BrokerError


def tracker_with(*tags: int) -> ConfirmTracker[str]:
    tracker: ConfirmTracker[str] = ConfirmTracker()
    for tag in tags:
        tracker.sent(tag, f"id-{tag}", f"msg-{tag}")
    return tracker


def test_a_single_ack_settles_its_own_tag_only():
    tracker = tracker_with(1, 2, 3)
    assert tracker.acked(2, multiple=False) == [("msg-2", "confirmed")]
    assert tracker.pending() == ["msg-1", "msg-3"]


def test_a_multiple_ack_settles_every_tag_up_to_it_in_order():
    tracker = tracker_with(1, 2, 3, 4, 5)
    tracker.acked(2, multiple=False)
    assert tracker.acked(4, multiple=True) == [
        ("msg-1", "confirmed"),
        ("msg-3", "confirmed"),
        ("msg-4", "confirmed"),
    ]
    assert tracker.pending() == ["msg-5"]
    assert len(tracker) == 1


def test_a_multiple_nack_fails_every_tag_up_to_it():
    tracker = tracker_with(1, 2, 3)
    assert tracker.nacked(2, multiple=True) == [("msg-1", "nacked"), ("msg-2", "nacked")]
    assert tracker.acked(3, multiple=False) == [("msg-3", "confirmed")]


def test_a_return_before_the_ack_makes_that_publish_unroutable():
    tracker = tracker_with(1, 2, 3)
    assert tracker.returned("id-2") is True
    assert tracker.acked(3, multiple=True) == [
        ("msg-1", "confirmed"),
        ("msg-2", "unroutable"),
        ("msg-3", "confirmed"),
    ]


def test_a_return_for_no_pending_publish_is_ignored():
    tracker = tracker_with(1)
    assert tracker.returned("id-9") is False
    assert tracker.acked(1, multiple=False) == [("msg-1", "confirmed")]


def test_answers_for_unknown_or_settled_tags_settle_nothing():
    tracker = tracker_with(5, 6)
    assert tracker.acked(4, multiple=True) == []
    assert tracker.acked(7, multiple=False) == []
    tracker.acked(5, multiple=False)
    assert tracker.acked(5, multiple=False) == []
    assert tracker.pending() == ["msg-6"]


def test_a_settled_publish_id_can_be_used_again():
    tracker = tracker_with(1)
    tracker.acked(1, multiple=False)
    tracker.sent(2, "id-1", "again")
    tracker.returned("id-1")
    assert tracker.acked(2, multiple=False) == [("again", "unroutable")]


def test_abandon_gives_back_everything_unanswered_and_starts_over():
    tracker = tracker_with(1, 2, 3)
    tracker.returned("id-3")
    tracker.acked(1, multiple=False)
    assert tracker.abandon() == ["msg-2", "msg-3"]
    assert len(tracker) == 0
    tracker.sent(1, "id-3", "on a new channel")  # tags start at 1 again; the old return is gone
    assert tracker.acked(1, multiple=False) == [("on a new channel", "confirmed")]


def test_tags_must_ascend_and_ids_must_be_unique_while_pending():
    tracker = tracker_with(3)
    with pytest.raises(ValueError):
        tracker.sent(3, "id-x", "same tag")
    with pytest.raises(ValueError):
        tracker.sent(4, "id-3", "same id")


# -- the inbox ----------------------------------------------------------------------------------


def publish(n: int, give_up_at: float = 100.0) -> Publish:
    return Publish(
        what=f"publish {n}",
        give_up_at=give_up_at,
        queue="q",
        body=b"",
        properties=pika.BasicProperties(),
        publish_id=str(n),
    )


def operation(name: str) -> Operation:
    return Operation(what=name, give_up_at=100.0, start=lambda channel, finish: None)


def test_the_inbox_asks_for_a_wake_only_when_its_kind_was_empty():
    inbox = Inbox()
    assert inbox.put(publish(1)) is True
    assert inbox.put(publish(2)) is False
    assert inbox.put(operation("declare")) is True  # operations wait apart from publishes
    assert [call.what for call in inbox.take_publishes()] == ["publish 1", "publish 2"]
    assert inbox.put(publish(3)) is True


def test_calls_put_back_go_first_in_their_order():
    inbox = Inbox()
    inbox.put(publish(3))
    inbox.put_back([publish(1), publish(2), operation("depth")])
    assert [call.what for call in inbox.take_publishes()] == ["publish 1", "publish 2", "publish 3"]
    taken = inbox.take_operation()
    assert taken is not None and taken.what == "depth"
    assert inbox.take_operation() is None
    assert not inbox.has_work()


def test_remove_takes_out_the_doomed_calls_only():
    inbox = Inbox()
    for n, deadline in [(1, 5.0), (2, 50.0), (3, 5.0)]:
        inbox.put(publish(n, give_up_at=deadline))
    removed = inbox.remove(lambda call: call.give_up_at < 10.0)
    assert [call.what for call in removed] == ["publish 1", "publish 3"]
    assert [call.what for call in inbox.take_publishes()] == ["publish 2"]


def test_a_shut_inbox_gives_back_what_waited_and_refuses_more():
    inbox = Inbox()
    inbox.put(publish(1))
    assert [call.what for call in inbox.shut()] == ["publish 1"]
    with pytest.raises(BrokerError, match="closed"):
        inbox.put(publish(2))


def test_a_call_is_resolved_once_the_first_answer_wins():
    call = publish(1)
    call.fail(BrokerError("deadline passed"))
    call.succeed()  # a confirm that came too late changes nothing
    assert call.done
    with pytest.raises(BrokerError, match="deadline"):
        call.future.result(timeout=0)
