"""The embedded store's ranking weights: how a setting is read ("semantic=0.7,recency=0.3"
or a dict), normalised to sum to 1, and written in one canonical form for the fingerprint."""

from __future__ import annotations

import math

from connectors.base import InvalidRequest

DEFAULT_WEIGHTS = {"semantic": 0.6, "recency": 0.15, "importance": 0.15, "usage": 0.1}


def parse_weights(weights: dict[str, float] | str | None) -> dict[str, float]:
    """Weights normalised to sum to 1; accepts a dict or "semantic=0.7,recency=0.3"."""
    if weights is None or weights == "":
        parsed = dict(DEFAULT_WEIGHTS)
    elif isinstance(weights, str):
        parsed = {}
        for part in weights.split(","):
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or name not in DEFAULT_WEIGHTS:
                raise InvalidRequest(
                    f"weights: {part.strip()!r} is not component=value with a component "
                    f"among {', '.join(DEFAULT_WEIGHTS)}"
                )
            try:
                parsed[name] = float(value)
            except ValueError:
                raise InvalidRequest(f"weights: {value.strip()!r} for {name} is not a number") from None
    else:
        parsed = {k: float(v) for k, v in weights.items()}
    unknown = set(parsed) - set(DEFAULT_WEIGHTS)
    if unknown:
        raise InvalidRequest(f"weights: unknown component(s) {', '.join(sorted(unknown))}")
    if any(v < 0 or not math.isfinite(v) for v in parsed.values()):
        raise InvalidRequest("weights: every weight must be a finite number >= 0")
    total = sum(parsed.values())
    if total <= 0:
        raise InvalidRequest("weights: at least one weight must be above 0")
    return {k: parsed.get(k, 0.0) / total for k in DEFAULT_WEIGHTS}


def canonical_weights(text: str) -> str | None:
    """Weights as the fingerprint writes them: normalised, every component, in the
    order of DEFAULT_WEIGHTS ("semantic=1" and "semantic=1,recency=0,..." are one
    setting); None when the text is not weights."""
    try:
        weights = parse_weights(text)
    except InvalidRequest:
        return None
    return ",".join(f"{name}={round(value, 6):g}" for name, value in weights.items())
