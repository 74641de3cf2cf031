"""Waiting on something a test can observe, not for a fixed time.

A test that sleeps for the product's own delay (a retry window, a background
writer) passes or fails with the machine's load; asking again until the state it
waits for is there, with a generous deadline, does neither."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], *, timeout_s: float, what: str, interval_s: float = 0.1) -> T:
    """``condition()`` again until it returns something truthy, which is returned;
    AssertionError naming ``what`` (and the last answer) once ``timeout_s`` has passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = condition()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not so after {timeout_s:g} s (last answer {answer!r})")
        time.sleep(interval_s)  # between two looks, not a wait for the product
