"""The embedded store with the real all-MiniLM-L6-v2 model."""

import json
import math
from datetime import UTC, datetime

import pytest
from demo_questions import PIZZA, THEME

from connectors.base import InvalidRequest, MemoryStore, NotFound, SupportsFeedback
from connectors.embedded.factories import open_demo_store
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.weights import DEFAULT_WEIGHTS, parse_weights
from connectors.embedding import model_loader as embedding

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.fixture
def small_store(tmp_path):
    store = EmbeddedStore(tmp_path / "s.sqlite", now=lambda: NOW)
    write_jsonl(
        tmp_path / "m.jsonl",
        [
            {"id": "a", "user_id": "u", "text": "Lives in Lisbon", "created_at": "2026-05-31T00:00:00Z"},
            {"id": "b", "user_id": "u", "text": "Prefers light UI theme", "age_days": 10, "importance": 0.9},
            {"id": "c", "user_id": "v", "text": "Allergic to peanuts", "age_days": 1, "usage_count": 7},
        ],
    )
    store.import_jsonl(tmp_path / "m.jsonl")
    yield store
    store.close()


def test_store_meets_the_protocol(small_store):
    assert isinstance(small_store, MemoryStore)
    assert isinstance(small_store, SupportsFeedback)


def test_theme_question_ranks_the_theme_memory_first(demo_store):
    result = demo_store.query(THEME, user_id="sam", k=5)
    top = result.hits[0]
    assert top.text == "Prefers light UI theme"
    assert top.breakdown["semantic"] > 0.7


def test_pizza_question_finds_nothing_semantically_close(demo_store):
    result = demo_store.query(PIZZA, user_id="sam", k=5)
    assert len(result.hits) == 5  # search always returns something
    assert max(h.breakdown["semantic"] for h in result.hits) < 0.3
    assert "Prefers light UI theme" in [h.text for h in result.hits]


def test_score_is_the_weighted_sum_of_its_breakdown(demo_store):
    for hit in demo_store.query(THEME, user_id="sam", k=5).hits:
        assert set(hit.breakdown) == set(DEFAULT_WEIGHTS) == set(hit.weights)
        assert math.isclose(sum(hit.weights.values()), 1.0)
        assert hit.score == pytest.approx(sum(hit.weights[c] * hit.breakdown[c] for c in hit.weights))
        assert all(0.0 <= v <= 1.0 for v in hit.breakdown.values())


def test_hits_are_ranked_by_score_and_only_from_the_user(demo_store):
    hits = demo_store.query("What does the user do at work?", user_id="sam", k=10).hits
    assert [h.rank for h in hits] == list(range(1, 11))
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert {h.metadata["user_id"] for h in hits} == {"sam"}


def test_recency_and_usage_components(small_store):
    hits = {h.memory_id: h for h in small_store.query("Lisbon", user_id="u", k=5).hits}
    # created 24 h before NOW with a 72 h half-life
    assert hits["a"].breakdown["recency"] == pytest.approx(2 ** (-24 / 72), rel=1e-6)
    assert hits["b"].breakdown["recency"] == pytest.approx(2 ** (-240 / 72), rel=1e-6)
    assert hits["b"].breakdown["importance"] == pytest.approx(0.9)
    usage = small_store.query("peanuts", user_id="v", k=1).hits[0].breakdown["usage"]
    assert usage == pytest.approx(min(1, math.log(8) / 5))


def test_half_life_and_weights_are_configurable(tmp_path, small_store):
    store = EmbeddedStore(small_store.path, half_life_hours=24, weights="semantic=1", now=lambda: NOW)
    hit = {h.memory_id: h for h in store.query("Lisbon", user_id="u", k=5).hits}["a"]
    assert hit.breakdown["recency"] == pytest.approx(0.5, rel=1e-6)
    assert hit.weights == {"semantic": 1.0, "recency": 0.0, "importance": 0.0, "usage": 0.0}
    assert hit.score == pytest.approx(hit.breakdown["semantic"])
    store.close()


@pytest.mark.parametrize(
    "weights, expected",
    [
        ("semantic=3,recency=1", {"semantic": 0.75, "recency": 0.25, "importance": 0.0, "usage": 0.0}),
        ({"semantic": 1, "usage": 1}, {"semantic": 0.5, "recency": 0.0, "importance": 0.0, "usage": 0.5}),
        (None, DEFAULT_WEIGHTS),
    ],
)
def test_weights_are_normalised(weights, expected):
    assert parse_weights(weights) == pytest.approx(expected)


@pytest.mark.parametrize(
    "weights, message",
    [
        ("cluster=1", "component"),
        ("semantic=abc", "not a number"),
        ("semantic=0", "above 0"),
        ({"semantic": -1, "recency": 2}, ">= 0"),
    ],
)
def test_bad_weights_say_what_is_wrong(weights, message):
    with pytest.raises(InvalidRequest, match=message):
        parse_weights(weights)


def test_query_is_read_only(small_store, tmp_path):
    before = small_store.get("c").usage_count
    small_store.query("peanuts", user_id="v", k=3)
    assert small_store.get("c").usage_count == before


def test_count_usage_bumps_when_asked(small_store):
    store = EmbeddedStore(small_store.path, count_usage=True, now=lambda: NOW)
    store.query("peanuts", user_id="v", k=3)
    assert store.get("c").usage_count == 8
    store.close()


def test_restart_does_not_re_encode(tmp_path, small_store, monkeypatch):
    path = small_store.path
    small_store.close()

    real_encode = embedding.encode

    def encode_nothing_twice(texts, **kwargs):
        assert not texts, f"encoded stored memories again: {texts}"
        return real_encode(texts, **kwargs)

    reopened = EmbeddedStore(path, now=lambda: NOW)
    ids = [m.memory_id for m in reopened.list(user_id="u", limit=10)]
    assert ids == ["a", "b"]
    # Re-importing unchanged texts encodes nothing.
    monkeypatch.setattr(embedding, "encode", encode_nothing_twice)
    report = reopened.import_jsonl(tmp_path / "m.jsonl")
    assert (report.imported, report.reencoded) == (3, 0)
    reopened.close()


def test_bad_lines_are_reported_with_number_and_field_and_the_rest_imported(tmp_path):
    source = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"id": "ok1", "user_id": "u", "text": "Runs on Sundays", "age_days": 3},
            "{not json",
            {"id": "x", "user_id": "u", "age_days": 1},
            {"id": "y", "user_id": "u", "text": "t", "created_at": "yesterday"},
            {"id": "z", "user_id": "u", "text": "t", "age_days": 1, "importance": 3},
            {"id": "w", "user_id": "u", "text": "t"},
            {"id": "v", "user_id": "u", "text": "t", "age_days": 1, "usage_count": -1},
            {"id": "ok2", "user_id": "u", "text": "Has a cat", "age_days": 1, "metadata": {"topic": "pets"}},
            ["a list"],
        ],
    )
    store = EmbeddedStore(tmp_path / "s.sqlite")
    report = store.import_jsonl(source)
    assert report.imported == 2
    assert [(i.line, i.field) for i in report.issues] == [
        (2, "(line)"),
        (3, "text"),
        (4, "created_at"),
        (5, "importance"),
        (6, "created_at"),
        (7, "usage_count"),
        (9, "(line)"),
    ]
    assert "bad.jsonl: line 4, field 'created_at'" in report.summary()
    assert {m.memory_id for m in store.list(user_id="u", limit=10)} == {"ok1", "ok2"}
    assert store.get("ok2").metadata == {"topic": "pets"}


def test_get_and_list(small_store):
    assert small_store.get("a").text == "Lives in Lisbon"
    assert small_store.get("a", user_id="v") is None
    assert small_store.get("nope") is None
    assert [m.memory_id for m in small_store.list(user_id="u", limit=1, offset=1)] == ["b"]
    assert len(small_store.list(user_id=None, limit=10)) == 3


def test_feedback_moves_importance_and_clamps(small_store):
    first = small_store.feedback("b", "positive")
    assert first.importance_before == pytest.approx(0.9)
    assert first.importance_after == pytest.approx(1.0)  # clamped at the top
    lows = [small_store.feedback("a", "negative").importance_after for _ in range(12)]
    assert lows[-1] == pytest.approx(0.05)  # clamped at the bottom
    assert small_store.get("a").importance == pytest.approx(0.05)


def test_consistent_feedback_moves_more_than_mixed(tmp_path, small_store):
    steady = [small_store.feedback("c", "ignored").adjustment for _ in range(3)]
    assert abs(steady[2]) > abs(steady[1]) > abs(steady[0])
    mixed = small_store.feedback("c", "retrieved").adjustment
    assert 0 < mixed < 0.05  # a contradicting signal moves half a step


def test_feedback_errors(small_store):
    with pytest.raises(NotFound):
        small_store.feedback("nope", "positive")
    with pytest.raises(InvalidRequest, match="signal must be one of"):
        small_store.feedback("a", "love")


def test_empty_query_is_refused_with_a_message(small_store):
    with pytest.raises(InvalidRequest, match="empty"):
        small_store.query("   ", user_id="u", k=5)


def test_unknown_user_returns_no_hits(small_store):
    assert small_store.query("Lisbon", user_id="nobody", k=5).hits == []


def test_demo_store_reports_a_bad_line_and_still_opens(tmp_path, monkeypatch):
    import connectors.embedded.factories as embedded

    source = write_jsonl(
        tmp_path / "demo.jsonl",
        [{"id": "s1", "user_id": "sam", "text": "Lives in Lisbon", "age_days": 2}, "{broken"],
    )
    monkeypatch.setattr(embedded, "DEMO_MEMORIES", source)
    store = open_demo_store(tmp_path / "data")
    result = store.query("Where does the user live?", user_id="sam", k=5)
    assert [h.memory_id for h in result.hits] == ["s1"]
    assert any("line 2" in note for note in result.notes)
    store.close()


def test_ties_at_the_cut_off_are_decided_by_id(tmp_path):
    store = EmbeddedStore(tmp_path / "t.sqlite", weights="importance=1", now=lambda: NOW)
    rows = [
        {"id": memory_id, "user_id": "u", "text": f"fact {memory_id}", "age_days": 1, "importance": 0.5}
        for memory_id in ("d", "b", "e", "a", "c")
    ]
    store.import_rows([{**r, "created_at": NOW, "usage_count": 0, "metadata": {}} for r in rows])
    assert [h.memory_id for h in store.query("anything", user_id="u", k=3).hits] == ["a", "b", "c"]
    store.close()


def test_an_empty_user_id_does_not_search_every_user(small_store):
    assert small_store.query("Lisbon", user_id="", k=5).hits == []
    assert {h.memory_id for h in small_store.query("Lisbon", user_id=None, k=5).hits} == {"a", "b", "c"}


def test_a_memory_removed_from_the_demo_file_leaves_the_demo_store(tmp_path, monkeypatch):
    import connectors.embedded.factories as embedded

    rows = [{"id": f"s{i}", "user_id": "sam", "text": f"Fact number {i}", "age_days": i} for i in range(3)]
    source = write_jsonl(tmp_path / "demo.jsonl", rows)
    monkeypatch.setattr(embedded, "DEMO_MEMORIES", source)
    open_demo_store(tmp_path / "data").close()
    write_jsonl(source, rows[:2])
    store = open_demo_store(tmp_path / "data")
    assert [m.memory_id for m in store.list(user_id="sam", limit=10)] == ["s0", "s1"]
    store.close()


def test_the_readme_tour_gives_the_pizza_hits_weighted_semantic_part_not_its_cosine(demo_store):
    from pathlib import Path

    [top, *_] = demo_store.query(PIZZA, user_id="sam", k=5).hits
    assert top.memory_id == "sam-02" and round(top.score, 2) == 0.29
    cosine = top.breakdown["semantic"]
    weighted = {part: top.weights[part] * value for part, value in top.breakdown.items()}
    assert round(cosine, 2) == 0.14 and round(weighted["semantic"], 2) == 0.08
    assert (round(weighted["importance"], 2), round(weighted["usage"], 2)) == (0.13, 0.07)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "the semantic part is small (0.08 of 0.29: a\n   cosine of 0.14 times its weight 0.6)" in readme


def test_memlens_import_refuses_a_file_over_the_size_bound_unread_in_one_line_naming_it(tmp_path, capsys):
    # the inbound boundary (read_memories_file): a good first line, then a sparse tail
    # past the bound; a whole read would hold 256 MB and reject or encode what it found
    from connectors.embedded.importing import MAX_MEMORIES_BYTES
    from dashboard.cli.main import main

    source = write_jsonl(tmp_path / "memories.jsonl", [{"id": "a", "user_id": "u", "text": "Lives in Lisbon", "age_days": 1}])
    with open(source, "r+b") as handle:
        handle.truncate(MAX_MEMORIES_BYTES + 1)
    db = tmp_path / "s.sqlite"
    assert main(["import", str(source), "--db", str(db)]) == 1  # nothing imported (docs/cli.md)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(source) in lines[0] and f"larger than {MAX_MEMORIES_BYTES:,} bytes" in lines[0], err
    assert EmbeddedStore(db).list(user_id=None, limit=5) == []


def test_a_created_at_past_2200_is_a_bad_line_named_and_the_rest_imported(tmp_path):
    source = write_jsonl(
        tmp_path / "m.jsonl",
        [
            {"id": "ok", "user_id": "u", "text": "Runs on Sundays", "age_days": 3},
            {"id": "far", "user_id": "u", "text": "Has a cat", "created_at": "9999-12-31T23:59:59Z"},
        ],
    )
    store = EmbeddedStore(tmp_path / "s.sqlite")
    report = store.import_jsonl(source)
    assert report.imported == 1 and [(i.line, i.field) for i in report.issues] == [(2, "created_at")]
    assert "from 1970 to 2199" in str(report.issues[0])
