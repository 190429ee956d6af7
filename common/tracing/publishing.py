"""A traced task's step message on its way to a module's queue names, as its `Link`, the span it
is published from (a step's commit, a submission, a sub-flow's start), so the attempt that runs
it links back to what made it. Published outside the task's trace (a timer's retry after its
backoff, the sweeper's relay), it names none. No span of its own: the hop is the attempt's
(kind CONSUMER, with the messaging.* attributes), and a span per publish would cost every step
as much again as its attempt's.
"""

from __future__ import annotations

import pydantic_core

from common.engine.document import OutboxEntry
from common.tracing.current_step import hex_ids


def traced_message(entry: OutboxEntry) -> bytes:
    body = entry.Body
    current = hex_ids()
    task_trace = str(body["Trace"].get("TraceParent", ""))
    if current is not None and task_trace[3:35] == current[0]:
        body = {**body, "Trace": {**body["Trace"], "Link": f"00-{current[0]}-{current[1]}-01"}}
    # The same compact JSON as an untraced message's (common/relay/encoding.py).
    return pydantic_core.to_json(body, inf_nan_mode="constants")
