"""The monitor's result as terminal lines, a JSON document and a webhook message. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dashboard.monitoring.alerts import Alert, MonitorResult
from dashboard.monitoring.windows import Window

if TYPE_CHECKING:
    from dashboard.monitoring.precision import PrecisionAlert


def _share(value: float | None) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.1%}"


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _source(files: int | str) -> str:
    """Where the turns came from: "N file(s)", or a table's words (memlens monitor --connect)."""
    return files if isinstance(files, str) else f"{files:,} file(s)"


def header_lines(result: MonitorResult, files: int | str) -> list[str]:
    s, b = result.settings, result.baseline
    return [
        f"{s.describe_floor()}, {s.window} windows, {len(result.windows):,} window(s) from {_source(files)}",
        f"baseline: {b.how} ({b.label}): {b.turns:,} turns, no memory {_share(b.no_memory_share)}",
    ]


def table_lines(result: MonitorResult) -> list[str]:
    window = result.settings.window
    head = f"{'window':<17}{'turns':>9}{'rows':>10}{'no memory':>11}{'kept/turn':>11}{'top-1 p10':>11}{'p50':>7}{'p90':>7}{'near floor':>12}{'drift (KS)':>12}  "
    lines = [head.rstrip()]
    for w in result.windows:
        role = "baseline" if w.in_baseline else ("" if w.tested else "not tested")
        lines.append(
            (
                f"{w.label(window):<17}{w.turns:>9,}{w.rows:>10,}{_share(w.no_memory_share):>11}{w.kept_per_turn:>11.2f}"
                f"{_score(w.p10):>11}{_score(w.p50):>7}{_score(w.p90):>7}{_share(w.near_floor):>12}{_score(w.drift):>12}  {role}"
            ).rstrip()
        )
    return lines


def text_lines(result: MonitorResult, files: int | str) -> list[str]:
    lines = header_lines(result, files) + table_lines(result)
    lines += [f"note: {note}" for note in result.notes]
    lines += [alert.line() for alert in result.alerts]
    if not result.alerts:
        lines.append(closing_line(result))
    return lines


def closing_line(result: MonitorResult, precision: tuple[int, str] | None = None) -> str:
    """The last line of a run without alerts: how many windows each side tested, and why
    the rest were not. `precision`: the kept-precision side's (windows tested, why the
    rest were not), when a judge watched it; each side counts its own windows."""
    tested = f"{sum(w.tested for w in result.windows):,}"
    if precision is None:
        return f"no alert: {tested} window(s) tested against the baseline{untested_why(result)}"
    count, why = precision
    return f"no alert: {count:,} window(s) tested for kept precision{why}, {tested} for the no-memory share{untested_why(result)}"


def untested_why(result: MonitorResult) -> str:
    """Why the windows outside the baseline were not tested for the no-memory share, in
    parentheses ("" when every one was)."""
    s = result.settings
    outside = [w for w in result.windows if not w.in_baseline]
    untested = [w for w in outside if not w.tested]
    if not result.windows or (outside and not untested):
        return ""
    if not outside:
        return " (every window is in the baseline)"
    if result.baseline.turns == 0:
        return " (the baseline holds no turns)"
    return f" (each under {s.min_turns:,} turns; --min-turns N to test them)"  # the one other reason (alerts.assess)


def _window_dict(w: Window, window: str) -> dict[str, Any]:
    def plain(value: float | None) -> float | None:
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else value

    return {
        "window": w.label(window),
        "start": w.start.isoformat(),
        "end": w.end.isoformat(),
        "turns": w.turns,
        "rows": w.rows,
        "no_memory_turns": w.no_memory,
        "no_memory_share": plain(w.no_memory_share),
        "kept_per_turn": w.kept_per_turn,
        "top1_p10": w.p10,
        "top1_p50": w.p50,
        "top1_p90": w.p90,
        "near_floor_share": w.near_floor,
        "top1_drift": w.drift,
        "drift_threshold": w.drift_threshold,
        "in_baseline": w.in_baseline,
        "tested": w.tested,
        "no_memory_p": w.extra.get("no_memory_p"),
        "drift_p": w.extra.get("drift_p"),
    }


def as_json(result: MonitorResult, *, files: list[str], issues: list[str], counts: dict[str, int]) -> dict[str, Any]:
    s, b = result.settings, result.baseline
    return {
        "floor": s.floor,
        "floor_rule": s.describe_floor(),
        "window": s.window,
        "margin": s.margin,
        "alpha": s.alpha,
        "min_turns": s.min_turns,
        "files": files,
        "counts": counts,
        "baseline": {
            "how": b.how,
            "windows": [w.label(s.window) for w in b.windows],
            "turns": b.turns,
            "no_memory_share": None if math.isnan(b.no_memory_share) else b.no_memory_share,
            "drift_spread": b.drift_spread,
        },
        "windows": [_window_dict(w, s.window) for w in result.windows],
        "alerts": [a.as_dict() for a in result.alerts],
        "notes": result.notes,
        "issues": issues,
    }


def webhook_message(
    result: MonitorResult, files: int | str, precision_alerts: Sequence[PrecisionAlert] = ()
) -> dict[str, Any]:
    """One message for the run: Slack's {"text": ...} plus the structured alerts, the
    no-memory side's and then the judged precision side's (`precision_alerts`)."""
    s = result.settings
    where = files if isinstance(files, str) else f"{files} file(s)"
    alerts: list[Alert | PrecisionAlert] = [*result.alerts, *precision_alerts]
    text = "\n".join(
        [f"memlens monitor: {len(alerts)} alert(s) at {s.describe_floor()} ({s.window} windows, {where})"]
        + [alert.line() for alert in alerts]
    )
    return {"text": text, "floor": s.floor, "window": s.window, "baseline": result.baseline.how, "alerts": [a.as_dict() for a in alerts]}
