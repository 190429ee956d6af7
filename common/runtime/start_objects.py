"""What a module process made while starting, kept out of the garbage collector's work.

By the time a module has started, most of the objects it will ever hold are made: the code of
everything it imported (the OpenTelemetry SDK and its exporter's HTTP stack too, when it
traces), its flows, its registry, its connections. CPython's full collection walks every one of
them each time it runs, and it runs whenever enough objects have outlived two younger
collections. A traced module makes such objects steadily: the batch processor holds each step's
spans for up to its schedule delay (5 s) before exporting them, long enough to reach the oldest
generation, so full collections come every few seconds, each walking some 80,000 objects.
Frozen (gc.freeze), the start's objects are left out of every collection; what the steps make
is collected as before.
"""

from __future__ import annotations

import gc


def freeze_start_objects() -> None:
    """Once started: collect what the start left as garbage, then freeze what remains."""
    gc.collect()
    gc.freeze()
