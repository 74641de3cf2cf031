"""What a calibration says, as text and JSON: shared by the CLI and the Calibrate page. Pure."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from connectors.common.score_spaces import AS_SENT, DISTANCE_RULES, SIMILARITY_STORES, ScoreSpace
from dashboard.calibration.label_files import LabelFile, issue_text
from dashboard.calibration.sweep import Calibration, evaluate, format_floor, shown_interval

if TYPE_CHECKING:
    from dashboard.calibration.advice import FloorAdvice


def _share(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.0%}"


def _ratio(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}"


def floor_line(row: dict[str, Any], has_turns: bool) -> str:
    line = (
        f"floor {format_floor(row['floor'])}: keeps {row['kept_irrelevant']} irrelevant, "
        f"drops {row['dropped_relevant']} relevant, precision {_ratio(row['precision'])}, "
        f"recall {_ratio(row['recall'])}"
    )
    share = row["no_memory_share"]
    if has_turns and (share is None or (isinstance(share, float) and math.isnan(share))):
        line += ", no-memory share n/a (a sample of each turn is labelled)"
    elif has_turns:
        line += f", no memory in {_share(row['no_memory_share'])} of turns"
    else:
        line += ", no-memory share n/a (no message ids)"
    return line


def table_lines(result: Calibration, labels: LabelFile) -> list[str]:
    has_turns = result.data.turn is not None
    lines = [floor_line(result.requested.row(i), has_turns) for i in range(len(result.requested))]
    rec = result.recommendation
    if result.band:
        lines.append(f"separating band: {result.band.describe()}")
    else:
        lines.append("no separating band: some irrelevant memory scores at or above some relevant one")
    interval = ""
    if rec.interval:
        low, high = shown_interval(rec.floor, rec.interval)
        interval = (
            f"; {rec.confidence:.0%} interval {format_floor(low)}-"
            f"{format_floor(high)} over {rec.resamples_used} resamples of {rec.resampled}"
        )
    elif rec.interval_note:
        interval = f"; {rec.interval_note}"
    lines.append(
        f"recommended floor {format_floor(rec.floor)} at cost ratio {rec.cost_ratio:g}: keeps {rec.kept_irrelevant} "
        f"irrelevant, drops {rec.dropped_relevant} relevant{interval}"
    )
    lines.append(rec.snippet)
    data = result.data
    turns = f" in {data.turns} turns" if has_turns else ""
    lines.append(
        f"{len(data)} labelled rows ({data.relevant_count} relevant, {data.irrelevant_count} not relevant){turns} "
        f"from {labels.source}"
    )
    lines.extend(result.notes + labels.notes)
    return lines


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or infinity
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def as_json(result: Calibration, labels: LabelFile) -> dict[str, Any]:
    data = result.data
    date_range = labels.date_range()
    return _plain(
        {
            "source": labels.source,
            "labels": {
                "rows": len(data),
                "relevant": data.relevant_count,
                "not_relevant": data.irrelevant_count,
                "turns": data.turns if data.turn is not None else None,
                "skipped_lines": labels.skipped,
                "date_range": list(date_range) if date_range else None,
                "stores": labels.stores(),
                "reviewers": labels.reviewers(),
            },
            "floors": [result.requested.row(i) for i in range(len(result.requested))],
            "band": {"low": result.band.low, "high": result.band.high, "rounded": result.band.rounded()}
            if result.band
            else None,
            "recommended": result.recommendation.as_dict(),
            "issues": [issue_text(issue) for issue in labels.issues],
            "notes": result.notes + labels.notes,
        }
    )


UNKNOWN_SPACE_HEAD = "The JSON names no score space: "


def unknown_space_caption(stores: list[str]) -> str:
    """Why the floor JSON names no score space, from what memlens knows of the labels'
    stores (their fingerprints): none named, several, or one whose rule needs settings
    this server does not have. Store names are outside text: draw it inertly."""
    if not stores:
        return (
            f"{UNKNOWN_SPACE_HEAD}these labels name no store, so nothing says which store's scores they are. "
            "Calibrate on labels made on Inspect or Label (each names its store) to name it."
        )
    if len(stores) > 1:
        shown = ", ".join(stores[:3]) + (f" and {len(stores) - 3} more" if len(stores) > 3 else "")
        return (
            f"{UNKNOWN_SPACE_HEAD}these labels come from {len(stores)} stores ({shown}), and one floor has "
            "no single space. Calibrate one store's labels to name its space."
        )
    kind = stores[0].split(":", 1)[0]
    if kind in DISTANCE_RULES:
        return (
            f"{UNKNOWN_SPACE_HEAD}these labels come from a distance store ({stores[0]}) whose settings this server "
            "does not know (or cannot open now). Open that store in the sidebar first, so the agent-side API can "
            "refuse the floor on another store's scores."
        )
    return f"{UNKNOWN_SPACE_HEAD}these labels come from a store ({stores[0]}) of a kind this server has no score rule for."


def labels_score_space(stores: list[str], opened: dict[str, ScoreSpace] | None = None) -> ScoreSpace | None:
    """The score space of labels from one store (``name:hash``): the space of that
    store as opened (`opened`, by fingerprint), else its kind's when the kind has one
    rule (a similarity sent as is); None (unknown) for labels from several stores or
    a distance store whose setting is not known here."""
    if len(stores) != 1:
        return None
    if opened and stores[0] in opened:
        return opened[stores[0]]
    kind = stores[0].split(":", 1)[0]
    return ScoreSpace(kind, AS_SENT) if kind in SIMILARITY_STORES else None


def floor_choice(
    result: Calibration,
    labels: LabelFile,
    *,
    floor: float | None = None,
    filters: dict[str, Any] | None = None,
    demo: bool = False,
    score_space: ScoreSpace | None = None,
) -> dict[str, Any]:
    """The chosen floor and the numbers behind it, for the page's JSON export.

    ``floor`` defaults to the recommended one; the counts are those at ``floor``.
    ``score_space`` is the space the labels' scores are in (``labels_score_space``):
    the agent-side API refuses to apply the floor in another; None writes null, read
    as "unknown". Ids, counts and scores only: no memory or query text.
    """
    rec = result.recommendation
    chosen = rec.floor if floor is None else float(floor)
    at = evaluate(result.data, [chosen])
    data = result.data
    date_range = labels.date_range()
    stores = labels.stores()
    return _plain(
        {
            "floor": chosen,
            "snippet": f"MEMORY_SCORE_FLOOR={format_floor(chosen)}",
            "recommended": chosen == rec.floor,
            "cost_ratio": rec.cost_ratio,
            "interval": list(rec.interval) if rec.interval else None,
            "interval_note": rec.interval_note,
            "confidence": rec.confidence,
            "resampled": rec.resampled,
            "band": {"low": result.band.low, "high": result.band.high} if result.band else None,
            "at_floor": {
                "kept_relevant": int(at.kept_relevant[0]),
                "kept_irrelevant": int(at.kept_irrelevant[0]),
                "dropped_relevant": int(at.dropped_relevant[0]),
                "dropped_irrelevant": int(at.dropped_irrelevant[0]),
                "precision": float(at.precision[0]),
                "recall": float(at.recall[0]),
                "no_memory_share": float(at.no_memory_share[0]) if at.no_memory_share is not None else None,
            },
            "label_count": len(data),
            "relevant": data.relevant_count,
            "not_relevant": data.irrelevant_count,
            "turns": data.turns if data.turn is not None else None,
            "date_range": {"from": date_range[0], "to": date_range[1]} if date_range else None,
            "store": stores[0] if len(stores) == 1 else None,
            "stores": stores,
            "score_space": score_space.as_dict() if score_space is not None else None,
            "reviewers": labels.reviewers(),
            "source": labels.source,
            "demo": demo,
            "filters": filters or {},
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )


def floor_file(
    result: Calibration,
    labels: LabelFile,
    *,
    advice: FloorAdvice | None = None,
    segments: dict[str, dict[str, float]] | None = None,
    filters: dict[str, Any] | None = None,
    demo: bool = False,
    score_space: ScoreSpace | None = None,
    rule: dict[str, Any] | None = None,
    rule_floor: float | None = None,
) -> dict[str, Any]:
    """The floor file (``memlens-floor.json``) that dashboard/floor_config.py reads:
    the Calibrate page's download and `memlens calibrate --floor-config-out` are both
    this. ``floor_choice`` at the advice's floor (the recommended one without advice),
    the floors per segment (``segments_for_export``), and how the floor was chosen.

    ``rule`` (calibration/turn_fit.rule_section) adds the rule that reads the whole
    turn; ``rule_floor`` is the floor a label-free cut was chosen with, written as the
    file's floor (the agent applies the two together)."""
    floor = rule_floor if rule_floor is not None else advice.floor if advice is not None else None
    choice = floor_choice(result, labels, floor=floor, filters=filters, demo=demo, score_space=score_space)
    choice["segments"] = segments or {}
    if advice is not None:
        choice.update(advice.export_fields())
    if rule is not None:
        choice["rule"] = rule
    if rule_floor is not None:
        # the single floor's interval is not this floor's: the rule's held-out figures say what it does
        choice.update(recommended=False, interval=None, interval_note="the floor beside the rule's cut: see rule.held_out")
    return choice
