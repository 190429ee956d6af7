"""What common.relay.items.ItemRelay provides to the mixins that carry its parts (an operator's
entries, waves, a source's pages, the rollback chains): its stores, reads, changes and settling,
declared once for all of them."""

from __future__ import annotations

from typing import Any


class RelayPart:
    _items: Any
    _reads: Any
    _look: Any
    _timing: Any
    _ids: Any
    _publish_item: Any
    _flush_task: Any
    _write_task: Any
    _change: Any
    _take_back: Any
    _start_next: Any
    _start_idle_chains: Any
    check_settled: Any
    apply_owes: Any
