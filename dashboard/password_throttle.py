"""Slowing down password guessing at the page's gate (ui/widgets/access.py). Pure.

Per client (the address the browser connects from): the first ``FREE_FAILURES``
wrong passwords cost nothing; each one after locks the client out for twice as long
as the last (1 s, 2 s, 4 s ... up to ``MAX_LOCK_S``). While locked, an attempt is
refused without being compared, so sessions opened in parallel gain nothing. A
right password clears the client's record. Records are kept for at most
``MAX_CLIENTS`` clients (the oldest forgotten first), so a flood of addresses
cannot grow the server's memory.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

FREE_FAILURES = 5
MAX_LOCK_S = 15 * 60.0
MAX_CLIENTS = 10_000


@dataclass
class _Record:
    failures: int = 0
    locked_until: float = 0.0


class FailureThrottle:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._records: OrderedDict[str, _Record] = OrderedDict()
        self._lock = threading.Lock()

    def wait(self, client: str) -> float:
        """Seconds `client` must wait before an attempt is compared (0: go ahead)."""
        with self._lock:
            record = self._records.get(client)
            return max(0.0, record.locked_until - self._clock()) if record else 0.0

    def failed(self, client: str) -> tuple[int, float]:
        """Record a wrong password: (wrong passwords in a row, seconds locked now)."""
        with self._lock:
            record = self._records.pop(client, None) or _Record()
            self._records[client] = record  # most recent last
            while len(self._records) > MAX_CLIENTS:
                self._records.popitem(last=False)
            record.failures += 1
            beyond = record.failures - FREE_FAILURES
            lock = min(MAX_LOCK_S, 2.0 ** (beyond - 1)) if beyond > 0 else 0.0
            record.locked_until = self._clock() + lock
            return record.failures, lock

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._records.pop(client, None)
