"""Which publishes on one confirm-mode channel still await the broker's answer: pure bookkeeping.

On a channel in confirm mode the broker numbers the messages it receives 1, 2, 3... (the delivery
tags) and answers each with Basic.Ack or Basic.Nack; `multiple=True` answers every message up to
and including the tag at once. A mandatory message that no queue took comes back as a Basic.Return
BEFORE its ack; the return carries no tag, so publishes are matched to returns by an id of their
own. No pika and no threads here: the publisher's I/O thread is the only caller.
"""

from __future__ import annotations

from typing import Generic, Literal, TypeVar

T = TypeVar("T")

Outcome = Literal["confirmed", "unroutable", "nacked"]


class ConfirmTracker(Generic[T]):
    def __init__(self) -> None:
        self._pending: dict[int, T] = {}  # by delivery tag; insertion order is tag order
        self._tag_of: dict[str, int] = {}  # publish id -> tag, for returns
        self._id_of: dict[int, str] = {}
        self._returned: set[int] = set()
        self._last_tag = 0

    def __len__(self) -> int:
        return len(self._pending)

    def pending(self) -> list[T]:
        return list(self._pending.values())

    def sent(self, tag: int, publish_id: str, item: T) -> None:
        """`item` went out as delivery `tag` (tags ascend on a channel; a new channel needs a new
        tracker, or `abandon` first)."""
        if tag <= self._last_tag:
            raise ValueError(f"delivery tag {tag} after {self._last_tag}: tags must ascend")
        if publish_id in self._tag_of:
            raise ValueError(f"publish id {publish_id!r} is pending already")
        self._last_tag = tag
        self._pending[tag] = item
        self._tag_of[publish_id] = tag
        self._id_of[tag] = publish_id

    def returned(self, publish_id: str) -> bool:
        """A Basic.Return for `publish_id`: its coming ack means "unroutable". False if unknown."""
        tag = self._tag_of.get(publish_id)
        if tag is None:
            return False
        self._returned.add(tag)
        return True

    def acked(self, tag: int, multiple: bool) -> list[tuple[T, Outcome]]:
        return [
            (item, "unroutable" if returned else "confirmed")
            for item, returned in self._settle(tag, multiple)
        ]

    def nacked(self, tag: int, multiple: bool) -> list[tuple[T, Outcome]]:
        return [(item, "nacked") for item, _returned in self._settle(tag, multiple)]

    def abandon(self) -> list[T]:
        """The channel is gone: every publish without an answer, in the order sent. The broker
        may or may not have taken them. The tracker is empty and ready for a new channel."""
        items = list(self._pending.values())
        self._pending.clear()
        self._tag_of.clear()
        self._id_of.clear()
        self._returned.clear()
        self._last_tag = 0
        return items

    def _settle(self, tag: int, multiple: bool) -> list[tuple[T, bool]]:
        """Take out the publishes answered; each with whether it was returned."""
        if multiple:
            # The oldest tags come first, so this stops right after the last one settled.
            tags = []
            for pending_tag in self._pending:
                if pending_tag > tag:
                    break
                tags.append(pending_tag)
        else:
            tags = [tag] if tag in self._pending else []
        settled = []
        for settled_tag in tags:
            del self._tag_of[self._id_of.pop(settled_tag)]
            returned = settled_tag in self._returned
            self._returned.discard(settled_tag)
            settled.append((self._pending.pop(settled_tag), returned))
        return settled
