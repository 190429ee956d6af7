"""How often one client may call the callback route, which no API token guards: a token bucket
per client address, decided purely (the route asks with the time; nothing here reads a clock).

Each address may make `burst` calls at once and `rate` a second after that; a call over it is
answered 429 with the seconds to wait. Addresses not seen for a while are forgotten, and at most
`MAX_ADDRESSES` are kept (the least recently seen go first), so a flood of addresses cannot grow
the process.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

RATE, BURST = 20.0, 40.0  # a second, per client address
MAX_ADDRESSES = 10_000


class CallbackRate:
    def __init__(self, rate: float = RATE, burst: float = BURST, max_addresses: int = MAX_ADDRESSES):
        self._rate, self._burst, self._max = rate, burst, max_addresses
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # address -> (tokens, at)
        self._lock = threading.Lock()

    def wait(self, address: str, now: float) -> float:
        """0.0 when `address` may call now (its call counted), else the seconds it must wait."""
        with self._lock:
            tokens, at = self._buckets.pop(address, (self._burst, now))
            tokens = min(self._burst, tokens + max(0.0, now - at) * self._rate)
            waited = 0.0 if tokens >= 1.0 else (1.0 - tokens) / self._rate
            self._buckets[address] = (tokens - 1.0 if waited == 0.0 else tokens, now)
            while len(self._buckets) > self._max:
                self._buckets.popitem(last=False)
            return waited
