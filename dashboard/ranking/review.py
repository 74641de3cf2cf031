"""Review flags: reasons a human should look at a ranking before trusting it. Pure.

Works on the ranking JSON shape (``dashboard/ranking/ranking_json.py``), so it reads
this page's own ranking and a pasted one alike.
"""

from __future__ import annotations

from typing import Any

from connectors.base import as_number

REVIEW_MIN_TOP_COMPOSITE = 0.4
REVIEW_NEAR_TIE = 0.05


def review_flags(
    payload: dict[str, Any],
    *,
    min_top_composite: float = REVIEW_MIN_TOP_COMPOSITE,
    near_tie: float = REVIEW_NEAR_TIE,
) -> list[str]:
    """Reasons a human should look at this ranking: a weak top result, or returned
    entries so close together that their order is a coin toss. Works on any ranking
    JSON (malformed entries are skipped; the validator reports them)."""
    rows = [
        r
        for r in payload.get("ranked_results", []) or []
        if isinstance(r, dict) and as_number(r.get("composite_score")) is not None and isinstance(r.get("entry_id"), str)
    ]
    if not rows:
        return ["There are no ranked results to review."]
    flags = []
    top = max(float(r["composite_score"]) for r in rows)
    if top < min_top_composite:
        flags.append(
            f"The top composite is {top:.2f}, under {min_top_composite:.2f}: no candidate is a convincing match."
        )
    returned = sorted(
        (r for r in rows if not r.get("excluded") and not r.get("stale")),
        key=lambda r: -float(r["composite_score"]),
    )
    start = 0
    while start < len(returned):
        head = float(returned[start]["composite_score"])
        end = start + 1
        # 1e-9: 0.65 - 0.60 is 0.05000000000000004 in floating point.
        while end < len(returned) and head - float(returned[end]["composite_score"]) <= near_tie + 1e-9:
            end += 1
        if end - start >= 2:
            group = returned[start:end]
            ids = ", ".join(r["entry_id"] for r in group)
            low = float(group[-1]["composite_score"])
            flags.append(
                f"{len(group)} entries lie within {near_tie:.2f} of each other "
                f"({head:.2f} to {low:.2f}: {ids}); their order is close to a tie."
            )
        start = end
    return flags
