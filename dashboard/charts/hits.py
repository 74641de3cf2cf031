"""Plotly figures for the pages. No Streamlit here: a figure is built, a page shows it."""

from __future__ import annotations

import html

import plotly.graph_objects as go

from connectors.base import Hit

COMPONENT_COLOURS = {
    "semantic": "#4C78A8",
    "recency": "#F58518",
    "importance": "#54A24B",
    "usage": "#B279A2",
    "cluster": "#EECA3B",
}


def hit_label(hit: Hit) -> str:
    # Plotly draws <a href>, <b> and friends in its labels: a store's id is escaped
    # (Plotly shows an entity as its character).
    return f"#{hit.rank} {html.escape(hit.memory_id)}"


KEPT_COLOUR, DROPPED_COLOUR = "#4C78A8", "#BAB0AC"


def _kept_colours(hits: list[Hit], kept_ids: set[str]) -> list[str]:
    return [KEPT_COLOUR if h.memory_id in kept_ids else DROPPED_COLOUR for h in hits]


def move_floor(fig: go.Figure, hits: list[Hit], floor: float, kept_ids: set[str]) -> go.Figure:
    """`fig` (from score_breakdown_figure) with its floor line, and the kept/dropped
    colours of a bare-score chart, moved to `floor`, in place. Building the figure
    again costs most of a floor move's rerun; moving one line costs little."""
    fig.layout.shapes[0].update(x0=floor, x1=floor)
    if fig.layout.shapes[0].visible is False:  # hidden by mark_rule: shown again, as a new figure has it (unset)
        fig.layout.shapes[0].visible = None
    fig.layout.annotations[0].update(x=floor, text=f"floor {floor:.2f}")
    if len(fig.data) == 1 and fig.data[0].name == "score":
        fig.data[0].marker.color = _kept_colours(hits, kept_ids)
    return fig


def mark_rule(fig: go.Figure, hits: list[Hit], cut: float | None, kept_ids: set[str], text: str) -> go.Figure:
    """`fig` under a floor file's rule, in place: its line at the turn's cut (a
    label-free cut with the floor: the lowest score kept) named ``text``, or no line
    (``cut`` None: the learned rule keeps by relevance, not by a score), and a
    bare-score chart's colours following the rule's kept hits."""
    move_floor(fig, hits, cut if cut is not None else 0.0, kept_ids)
    fig.layout.shapes[0].update(visible=cut is not None)
    fig.layout.annotations[0].update(text=text)
    return fig


def score_breakdown_figure(hits: list[Hit], floor: float, kept_ids: set[str]) -> go.Figure:
    """One horizontal bar per hit: its score split into weighted components when
    the store says how they combine, the bare score otherwise; the floor as a line."""
    labels = [hit_label(h) for h in hits]
    fig = go.Figure()
    weighted = [h for h in hits if h.weights and h.breakdown]
    if weighted and len(weighted) == len(hits):
        components = [c for c in hits[0].weights if any(c in h.breakdown for h in hits)]
        for component in components:
            fig.add_bar(
                name=f"{html.escape(component)} × {hits[0].weights[component]:.2f}",
                y=labels,
                x=[h.weights.get(component, 0.0) * h.breakdown.get(component, 0.0) for h in hits],
                orientation="h",
                marker_color=COMPONENT_COLOURS.get(component),
                customdata=[h.breakdown.get(component, 0.0) for h in hits],
                # The component's name comes from the store: it enters the hover through
                # the trace's name, so a "%{...}" in it is shown, not read as a template.
                meta=[html.escape(component)],
                hovertemplate="%{meta[0]}: %{customdata:.3f} → %{x:.3f} of the score<extra></extra>",
            )
    else:
        fig.add_bar(
            name="score",
            y=labels,
            x=[h.score or 0.0 for h in hits],
            orientation="h",
            marker_color=_kept_colours(hits, kept_ids),
            hovertemplate="score %{x:.3f}<extra></extra>",
        )
    fig.add_vline(
        x=floor, line_dash="dash", line_color="#E45756", annotation_text=f"floor {floor:.2f}", annotation_position="top"
    )
    fig.update_layout(
        barmode="stack",
        height=120 + 34 * max(1, len(hits)),
        margin=dict(l=10, r=10, t=40, b=10),
        yaxis=dict(autorange="reversed", title=None),
        xaxis=dict(title="score", range=[0, max(1.0, max((h.score or 0) for h in hits) if hits else 1.0)]),
        legend=dict(orientation="h", y=-0.2),
    )
    return fig
