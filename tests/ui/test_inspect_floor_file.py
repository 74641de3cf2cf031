"""A floor file applied on Inspect in AppTest (issue 54): the sidebar's "Floor file"
read by FloorConfig; with a rule that reads the whole turn, the hits table shows the
rule's decision and its reason per hit, the summary, the chart and the prompt block
follow it (the block the agent side builds from the same hits), and the page says
which rule applies and what the slider is under it. A bad file is an error box and
the page goes on as without one."""

from __future__ import annotations

import json

import pytest
from demo_questions import THEME
from markdown_text import error_texts, seen

from dashboard.runtime import FloorConfig, memory_from_hits
from dashboard.turn_rule import TurnRule, decide
from tests.ui.test_inspect import ask, statuses, table

pytestmark = pytest.mark.usefixtures("named_reviewer")

SPACE = {"store": "embedded", "formula": "as sent", "setting": None}
LARGEST_GAP_FILE = {"floor": 0.1, "score_space": SPACE, "rule": {"kind": "largest-gap"}}
# relevance = 1 / (1 + exp(-(40 * score - 12))): at or above 0.5 exactly when the score is at least 0.3
LEARNED_FILE = {
    "floor": 0.9,
    "score_space": SPACE,
    "rule": {"kind": "learned", "features": ["score"], "coefficients": [40.0], "intercept": -12.0, "cut": 0.5},
}


def upload(at, document: dict | bytes, name: str = "memlens-floor.json"):
    content = document if isinstance(document, bytes) else json.dumps(document).encode()
    at.sidebar.file_uploader(key="inspect_floor_file").set_value((name, content, "application/json")).run()
    assert not at.exception, at.exception
    return at


def the_agents_turn(at, document: dict, tmp_path):
    """What memory_from_hits keeps of the page's hits under the same file."""
    path = tmp_path / "floor.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    frame = table(at).sort_values("rank")
    hits = [{"id": m, "text": t, "score": s} for m, t, s in zip(frame["memory id"], frame["text"], frame["score"], strict=True)]
    return memory_from_hits(hits, store_kind="embedded", floor=FloorConfig.load(path))


def test_a_largest_gap_rule_file_shows_the_rules_reasons_and_its_prompt_block(app, tmp_path):
    at = upload(ask(app(), THEME), LARGEST_GAP_FILE)
    assert at.slider(key="floor").value == pytest.approx(0.1)  # a new file sets the slider to its floor
    said = [seen(box.value) for box in at.info]
    assert any("applies its largest-gap rule (Adaptive-k, with the floor): the slider is the rule's floor (0.10)" in s for s in said)

    frame = table(at).sort_values("rank")
    expected = decide(list(frame["score"]), TurnRule("largest-gap"), 0.1)
    shown = statuses(at)
    assert [shown[m] for m in frame["memory id"]] == [d.reason for d in expected]
    assert any(reason.startswith("kept: ") and "at or above the turn's rule cut" in reason for reason in shown.values())
    assert any(reason.startswith("dropped: ") and "above the largest drop" in reason for reason in shown.values())

    turn = the_agents_turn(at, LARGEST_GAP_FILE, tmp_path)
    assert [h.memory_id for h in turn.kept] == [m for m, d in zip(frame["memory id"], expected, strict=True) if d.kept]
    assert at.code[0].value == turn.block  # the prompt block of the rule's kept hits, as the agent builds it
    assert next(m.value for m in at.metric if m.label == "Kept") == str(len(turn.kept))
    assert 0 < len(turn.kept) < len(frame)
    # the chart's line is the turn's cut: the lowest score the rule keeps
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    lowest_kept = min(h.score for h in turn.kept)
    assert figure["layout"]["shapes"][0]["x0"] == pytest.approx(lowest_kept)
    assert figure["layout"]["annotations"][0]["text"].startswith("largest-gap cut ")


def test_a_learned_rule_file_says_the_slider_is_not_used_and_does_not_follow_it(app, tmp_path):
    at = upload(ask(app(), THEME), LEARNED_FILE)
    said = [seen(box.value) for box in at.info]
    assert any("applies its learned rule (relevance cut 0.50)" in s and "the floor slider is not used by this rule" in s for s in said)
    before = statuses(at)
    assert all(reason.startswith(("kept: relevance", "dropped: relevance")) for reason in before.values())
    turn = the_agents_turn(at, LEARNED_FILE, tmp_path)
    assert at.code[0].value == turn.block
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert figure["layout"]["shapes"][0]["visible"] is False  # no score line: it keeps by relevance
    at.slider(key="floor").set_value(0.0).run()
    assert statuses(at) == before  # the learned rule reads no floor
    assert at.code[0].value == turn.block


def test_a_file_that_cannot_be_read_is_an_error_and_the_slider_decides_as_before(app):
    at = ask(app(), THEME)
    before = statuses(at)
    at = upload(at, b'{"floor": 0.2, "rule": {"kind": "elbow"}}', name="broken.json")
    assert any("The floor file cannot be used: broken.json: field 'rule.kind'" in e for e in error_texts(at))
    assert statuses(at) == before
    assert set(before.values()) <= {"kept", "dropped"}
