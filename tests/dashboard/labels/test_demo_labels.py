"""The bundled demo labels: judged by id from demo_data/queries.jsonl, and still what
the demo store returns (regenerate with `python -m dashboard.demo`)."""

from __future__ import annotations

import pytest

from dashboard.demo import (
    DEMO_K,
    DEMO_REVIEWER,
    demo_store_fingerprint,
    label_demo_hits,
    load_demo_labels,
    main,
)
from dashboard.judged import DEMO_QUERIES, read_questions


@pytest.fixture(scope="module")
def fresh_demo_store(tmp_path_factory):
    """A demo store of its own: a shared one may have had feedback move importance."""
    from connectors.embedded.factories import open_demo_store

    store = open_demo_store(tmp_path_factory.mktemp("demo-labels"))
    yield store
    store.close()


def test_bundled_labels_follow_the_judgments_of_the_demo_queries():
    labels = load_demo_labels()
    queries, problems = read_questions(DEMO_QUERIES)
    assert problems == [] and labels.issues == []
    assert {row.reviewer for row in labels.rows} == {DEMO_REVIEWER}
    assert {row.store for row in labels.rows} == {demo_store_fingerprint()}
    by_query = {q.message_id: q for q in queries}
    assert {row.message_id for row in labels.rows} == set(by_query)
    for row in labels.rows:
        expected = "relevant" if row.memory_id in by_query[row.message_id].relevant else "not_relevant"
        assert row.label == expected, (row.message_id, row.memory_id)
    for message_id in by_query:
        ranks = [row.rank for row in labels.rows if row.message_id == message_id]
        assert ranks == list(range(1, DEMO_K + 1))
    data = labels.labelled_scores()
    assert data.turns == len(queries) and 0 < data.relevant_count < len(data)


def test_bundled_labels_are_what_the_demo_store_returns_now(fresh_demo_store):
    queries, _ = read_questions(DEMO_QUERIES)
    fresh = label_demo_hits(fresh_demo_store, queries)
    bundled = load_demo_labels().rows
    assert [(row.message_id, row.memory_id, row.rank, row.label) for row in fresh] == [
        (r.message_id, r.memory_id, r.rank, r.label) for r in bundled
    ]
    # A fresh store dates each memory by its age_days, so only seconds of recency differ.
    for label, row in zip(fresh, bundled, strict=True):
        assert label.score == pytest.approx(row.score, abs=1e-4)



def test_an_unreadable_queries_file_is_named_and_the_labels_are_left_as_they_were(tmp_path, capsys):
    out = tmp_path / "labels.jsonl"
    out.write_text("kept\n", encoding="utf-8")
    assert main(["--queries", str(tmp_path / "gone.jsonl"), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "gone.jsonl: line 0, field '(file)': cannot read" in err and "left as it was" in err
    assert out.read_text(encoding="utf-8") == "kept\n"
