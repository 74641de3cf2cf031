"""The breakdown chart: moving the floor on a built figure must draw exactly what
building it again at that floor draws (the Inspect page moves it instead of
rebuilding it on every floor move)."""

import pytest

from connectors.base import Hit
from dashboard.charts.hits import mark_rule, move_floor, score_breakdown_figure


def hits(weighted: bool) -> list[Hit]:
    return [
        Hit(
            memory_id=f"m{i}",
            rank=i + 1,
            text=f"memory {i}",
            score=0.9 - 0.15 * i,
            raw_score=0.9 - 0.15 * i,
            breakdown={"semantic": 0.8 - 0.1 * i, "recency": 0.5} if weighted else {},
            weights={"semantic": 0.7, "recency": 0.3} if weighted else {},
        )
        for i in range(6)
    ]


@pytest.mark.parametrize("weighted", [True, False], ids=["stacked components", "bare scores"])
def test_moving_the_floor_draws_what_a_rebuild_at_that_floor_draws(weighted):
    rows = hits(weighted)
    figure = score_breakdown_figure(rows, 0.5, {h.memory_id for h in rows if h.score >= 0.5})
    for floor in (0.2, 0.75, 0.0):
        kept = {h.memory_id for h in rows if h.score >= floor}
        assert move_floor(figure, rows, floor, kept).to_dict() == score_breakdown_figure(rows, floor, kept).to_dict()
    # a floor file's learned rule hid the line (Inspect); the file taken away, the floor's line is back as drawn anew
    mark_rule(figure, rows, None, {rows[0].memory_id}, "learned rule: kept by relevance")
    assert figure.layout.shapes[0].visible is False
    kept = {h.memory_id for h in rows if h.score >= 0.5}
    assert move_floor(figure, rows, 0.5, kept).to_dict() == score_breakdown_figure(rows, 0.5, kept).to_dict()


def test_a_component_named_like_a_hover_template_is_shown_as_its_name():
    # A store names its score components; "%{x}" or markup in a name must reach the
    # hover as the name itself, not as a template field or HTML.
    name = "%{x}<b>boost</b>"
    rows = [
        Hit(memory_id="m1", rank=1, text="t", score=0.6, raw_score=0.6, breakdown={name: 0.6}, weights={name: 1.0})
    ]
    (bar,) = score_breakdown_figure(rows, 0.5, {"m1"}).data
    assert name not in bar.hovertemplate and "%{x}<b>" not in bar.hovertemplate
    assert bar.meta == ("%{x}&lt;b&gt;boost&lt;/b&gt;",)
    assert bar.hovertemplate.startswith("%{meta[0]}: ")
