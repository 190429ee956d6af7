"""Which records owing their step something the sweeper applies now: those left owing, unchanged,
for the relay grace.

A record's writer applies what it owes right after writing it (common.relay.items.apply_owes),
so a record seen owing is usually being applied at that very moment. The sweeper repeats it
only for a writer that died: applied by both, the step's next change is made twice over (each
write refused but one), and the one that wins may be the sweeper's, outside the step whose end
made it (a traced task's next message then links to no span). So, as the task outbox relay waits
for an entry to be past the grace, this waits for a record to have stayed owing with the same
`Version` across sweeps for the grace: a living writer changes it well before.
"""

from __future__ import annotations

from collections.abc import Iterable

from common.engine.document import ItemRecord


class OwesGrace:
    """Remembers when each owing record was first seen at its version (one sweeper's memory)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, float]] = {}

    def due(self, records: Iterable[ItemRecord], now: float, relay_before: float) -> list[ItemRecord]:
        """The records among `records` (every record owing now, as read) seen owing at their
        version since `relay_before` or earlier; the others are remembered from `now` on."""
        seen: dict[str, tuple[int, float]] = {}
        due = []
        for record in records:
            key = record.record_id
            version, since = self._seen.get(key, (record.Version, now))
            if version != record.Version:
                since = now  # changed since: its writer is alive, or another took it on
            seen[key] = (record.Version, since)
            if since <= relay_before:
                due.append(record)
        self._seen = seen  # a record no longer owing is forgotten
        return due
