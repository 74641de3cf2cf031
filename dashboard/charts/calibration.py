"""Plotly figures for the Calibrate page. No Streamlit here: a figure is built, a page shows it.

Every figure marks the Inspect floor (the one the reviewer is using now), the
recommended floor and, when there is one, the separating band, so the four charts
read against the same reference lines.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dashboard.calibration.diagnosis import TurnSplit
from dashboard.calibration.sweep import Band, LabelledScores, Sweep, format_floor
from dashboard.calibration.turn_fit import RuleCurve, RuleFigures

RELEVANT_COLOUR = "#4C78A8"
IRRELEVANT_COLOUR = "#F58518"
CURRENT_COLOUR = "#E45756"
RECOMMENDED_COLOUR = "#54A24B"
BAND_FILL = "rgba(84, 162, 75, 0.12)"
NEUTRAL_COLOUR = "#72B7B2"
MAX_LINE_POINTS = 2_000  # a line of a million floors draws no better than two thousand


def _mark_floors(fig: go.Figure, current: float, recommended: float, band: Band | None) -> go.Figure:
    if band is not None:
        fig.add_vrect(x0=band.low, x1=band.high, fillcolor=BAND_FILL, line_width=0, layer="below")
    marks = [
        (current, f"Inspect floor {format_floor(current)}", CURRENT_COLOUR, "dash"),
        (recommended, f"recommended {format_floor(recommended)}", RECOMMENDED_COLOUR, "dot"),
    ]
    # The two floors are often close: the lower one's label reads leftwards from its
    # line and the higher one's rightwards, so the labels never overlap.
    marks.sort(key=lambda mark: mark[0])
    for (x, text, colour, dash), anchor in zip(marks, ("right", "left"), strict=True):
        fig.add_vline(x=x, line_dash=dash, line_color=colour)
        fig.add_annotation(
            x=x, y=1.0, xref="x", yref="paper", text=text, showarrow=False,
            xanchor=anchor, yanchor="bottom", font=dict(color=colour, size=11),
        )  # fmt: skip
    return fig


def _layout(fig: go.Figure, title: str, y_title: str, **yaxis) -> go.Figure:
    fig.update_layout(
        title=title,
        height=340,
        margin=dict(l=10, r=10, t=60, b=10),
        xaxis=dict(title="floor (score)"),
        yaxis=dict(title=y_title, **yaxis),
        legend=dict(orientation="h", y=-0.25),
        hovermode="x unified",
    )
    return fig


def thinned(sweep: Sweep, max_points: int = MAX_LINE_POINTS) -> np.ndarray:
    """Indices of the sweep worth drawing: all of them when few, else evenly spaced
    ones plus every requested floor and both ends."""
    if len(sweep) <= max_points:
        return np.arange(len(sweep))
    spaced = np.linspace(0, len(sweep) - 1, max_points).astype(np.int64)
    return np.unique(np.concatenate([spaced, np.flatnonzero(sweep.requested)]))


def _step(fig: go.Figure, x: np.ndarray, y: np.ndarray, name: str, colour: str, fmt: str) -> None:
    # A sweep value belongs to the floors just below its x (up to the previous
    # distinct score), so the line steps up to it before reaching it: "vh".
    fig.add_scatter(
        x=x, y=y, name=name, mode="lines", line_shape="vh", line_color=colour, hovertemplate=f"{name}: %{{y:{fmt}}}<extra></extra>"
    )


def score_histogram_figure(
    data: LabelledScores, current: float, recommended: float, band: Band | None, bins: int = 40
) -> go.Figure:
    """Scores of relevant and irrelevant hits, overlaid on shared bins, each label's
    bars a share of that label's hits: with rare relevant hits (5% of the labels)
    counts would flatten their histogram under the other's; as shares both shapes
    show, and the legend keeps the counts."""
    low, high = float(data.scores.min()), float(data.scores.max())
    size = (high - low) / bins if high > low else 0.01
    xbins = dict(start=low, end=high + size, size=size)
    fig = go.Figure()
    for mask, name, colour in ((data.relevant, "relevant", RELEVANT_COLOUR), (~data.relevant, "not relevant", IRRELEVANT_COLOUR)):
        fig.add_histogram(
            x=data.scores[mask], name=f"{name} ({int(mask.sum()):,} hits)", xbins=xbins, histnorm="percent",
            marker_color=colour, opacity=0.65, hovertemplate=f"{name}: %{{y:.1f}}% of its hits<extra></extra>",
        )
    fig.update_layout(barmode="overlay")
    _layout(fig, "Scores by label (each label's hits as 100%)", "share of the label's hits (%)")
    fig.update_layout(xaxis=dict(title="score"))
    return _mark_floors(fig, current, recommended, band)


def tradeoff_figure(sweep: Sweep, current: float, recommended: float, band: Band | None) -> go.Figure:
    """Irrelevant memories kept and relevant ones dropped, at every floor."""
    index = thinned(sweep)
    fig = go.Figure()
    _step(fig, sweep.floor[index], sweep.kept_irrelevant[index], "irrelevant kept", IRRELEVANT_COLOUR, ",d")
    _step(fig, sweep.floor[index], sweep.dropped_relevant[index], "relevant dropped", RELEVANT_COLOUR, ",d")
    _layout(fig, "What each floor gets wrong", "memories", rangemode="tozero")
    return _mark_floors(fig, current, recommended, band)


def precision_recall_figure(sweep: Sweep, current: float, recommended: float, band: Band | None) -> go.Figure:
    index = thinned(sweep)
    fig = go.Figure()
    _step(fig, sweep.floor[index], sweep.precision[index], "precision", IRRELEVANT_COLOUR, ".2f")
    _step(fig, sweep.floor[index], sweep.recall[index], "recall", RELEVANT_COLOUR, ".2f")
    _layout(fig, "Precision and recall of what is kept", "share", range=[0, 1.05])
    return _mark_floors(fig, current, recommended, band)


def no_memory_figure(
    sweep: Sweep, current: float, recommended: float, band: Band | None, split: TurnSplit | None = None
) -> go.Figure:
    """The share of turns whose prompt would say "no stored memory is relevant";
    with ``split`` (over the sweep's floors), answerable turns (a loss) and turns
    with no relevant memory (the right outcome) apart."""
    share = sweep.no_memory_share
    if share is None:
        raise ValueError("the share of turns with no memory needs message ids")
    index = thinned(sweep)
    fig = go.Figure()
    _step(fig, sweep.floor[index], share[index], "turns with no memory", NEUTRAL_COLOUR, ".0%")
    if split is not None and split.answerable and split.unanswerable:
        _step(fig, sweep.floor[index], split.answerable_share[index], "answerable (a loss)", RELEVANT_COLOUR, ".0%")
        others = "no relevant memory (right)" if split.known else "no relevant memory labelled (answer unknown)"
        _step(fig, sweep.floor[index], split.unanswerable_share[index], others, IRRELEVANT_COLOUR, ".0%")
    _layout(fig, "Turns left with no memory", "share of turns", range=[0, 1.05], tickformat=".0%")
    return _mark_floors(fig, current, recommended, band)


RULE_COLOURS = {"floor": CURRENT_COLOUR, "learned": RECOMMENDED_COLOUR, "largest-gap": RELEVANT_COLOUR, "top-ratio": IRRELEVANT_COLOUR}


def held_out_figure(
    curves: dict[str, RuleCurve], points: dict[str, RuleFigures], names: dict[str, str], recommended: str
) -> go.Figure:
    """The held-out precision-recall curve of the single floor and of each turn rule
    (calibration/turn_fit.held_out_curves), one chart: recall across, precision up, a
    line per rule over its thresholds and a marker at the point the target chose
    (``points``: rule -> its held-out figures). The recommended rule's line is drawn
    thicker, so the chart says what the text says."""
    fig = go.Figure()
    for name, curve in curves.items():
        order = np.argsort(curve.recall, kind="stable")
        index = order[np.unique(np.linspace(0, len(order) - 1, min(len(order), MAX_LINE_POINTS)).astype(np.int64))]
        colour = RULE_COLOURS.get(name, NEUTRAL_COLOUR)
        said = names.get(name, name) + (" (recommended)" if name == recommended else "")
        fig.add_scatter(
            x=curve.recall[index], y=curve.precision[index], name=said, mode="lines", line_color=colour,
            line_width=3 if name == recommended else 1.5, line_shape="hv",
            hovertemplate=f"{said}: recall %{{x:.2f}}, precision %{{y:.2f}}<extra></extra>",
        )  # fmt: skip
        point = points.get(name)
        if point is not None:
            fig.add_scatter(
                x=[point.recall], y=[point.precision], name=f"{names.get(name, name)} at the target", mode="markers",
                marker=dict(color=colour, size=10, symbol="diamond"), showlegend=False,
                hovertemplate=f"{names.get(name, name)} at the target: recall %{{x:.2f}}, precision %{{y:.2f}}<extra></extra>",
            )  # fmt: skip
    fig.update_layout(
        title="Held-out precision and recall: the single floor and each turn rule",
        height=380,
        margin=dict(l=10, r=10, t=60, b=10),
        xaxis=dict(title="recall (held out)", range=[0, 1.02]),
        yaxis=dict(title="precision (held out)", range=[0, 1.05]),
        legend=dict(orientation="h", y=-0.25),
    )
    return fig
