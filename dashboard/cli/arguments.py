"""Argument types the commands share: each turns a command-line word into a number
or says, as argparse's error, what was wrong with it (the messages are part of the
CLI's output)."""

from __future__ import annotations

import argparse
import math

from dashboard.floor import floor_list


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def finite(text: str) -> float:
    """A finite number: `nan`, `inf` and a number too large for a float are refused
    (each would pass every comparison wrongly, or end in a traceback later)."""
    if len(text) > 50:
        raise argparse.ArgumentTypeError(f"{text[:20]!r}... ({len(text):,} characters) is not a usable number")
    value = _number(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def non_negative(text: str) -> float:
    value = _number(text)
    if not value >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"{text!r} must be a number >= 0")
    return value


def positive_number(text: str) -> float:
    value = _number(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a number above 0")
    return value


def share(text: str) -> float:
    value = _number(text)
    if not (math.isfinite(value) and 0 < value <= 1):
        raise argparse.ArgumentTypeError(f"{text!r} must be a share above 0 and at most 1, e.g. 0.9")
    return value


def parse_floors(text: str) -> list[float]:
    """Comma-separated floors in [0, 1], at least one (the page's rule: floor_list)."""
    floors, problems = floor_list(text)
    if problems:
        raise argparse.ArgumentTypeError("; ".join(problems))
    if not floors:
        raise argparse.ArgumentTypeError("give at least one floor, e.g. 0.2,0.3")
    return floors
