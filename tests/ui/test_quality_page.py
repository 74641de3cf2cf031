"""The Quality page in AppTest: top-3 precision for the store's order and a
re-ranked order over the demo queries, a labelled session, and the read log."""

from __future__ import annotations

import json
import math

import pytest

from dashboard.database import AppDatabase

DEMO_QUERIES = __import__("pathlib").Path(__file__).resolve().parents[2] / "demo_data" / "queries.jsonl"


def demo_queries():
    return [json.loads(line) for line in DEMO_QUERIES.read_text().splitlines() if line.strip()]


def metric_values(at, label):
    return [m.value for m in at.metric if m.label == label]


def quality_page(app, run_demo=True, **state):
    at = app(**state)
    at.run()
    at.switch_page("quality.py").run()
    assert not at.exception, at.exception
    if run_demo:  # opening the page sends nothing: the demo queries wait for this click
        at.button(key="quality_run_demo").click().run()
        assert not at.exception, at.exception
    return at


@pytest.fixture(scope="module")
def expected_precision(demo_store):
    """Top-3 precision worked out here from the demo store's raw hits, without the
    metrics or rerank modules: the store's order, and the default re-ranking
    (0.7 x semantic + 0.3 x recency, semantic under 0.3 excluded; the store's
    recency component uses the same 72 h half-life)."""
    store_figures, reranked_figures = [], []
    for query in demo_queries():
        hits = demo_store.query(query["query"], user_id=query["user_id"], k=5).hits
        relevant = set(query["relevant"])
        top = [h.memory_id for h in hits[:3]]
        store_figures.append(sum(m in relevant for m in top) / len(top))
        kept = [h for h in hits if h.breakdown["semantic"] >= 0.3]
        kept.sort(key=lambda h: -(0.7 * h.breakdown["semantic"] + 0.3 * h.breakdown["recency"]))
        if kept:
            top = [h.memory_id for h in kept[:3]]
            reranked_figures.append(sum(m in relevant for m in top) / len(top))
    return sum(store_figures) / len(store_figures), sum(reranked_figures) / len(reranked_figures)


def test_demo_queries_show_top3_precision_for_the_store_and_the_reranked_order(app, data_dir, expected_precision):
    at = quality_page(app)
    store_expected, reranked_expected = expected_precision
    [store_shown] = metric_values(at, "Top-3 precision, store order")
    [reranked_shown] = metric_values(at, "Top-3 precision, re-ranked")
    assert float(store_shown) == pytest.approx(store_expected, abs=5e-4)
    assert float(reranked_shown) == pytest.approx(reranked_expected, abs=5e-4)
    assert any("store's `semantic` component" in c.value for c in at.caption)
    # The threshold drops the off-topic memories: the prompt gets far fewer wrong ones.
    assert float(reranked_shown) > float(store_shown)

    summary = next(d.value for d in at.dataframe if "precision@3" in d.value.columns)
    assert list(summary["order"])[0] == "store order" and list(summary["order"])[1].startswith("re-ranked (")
    per_query = next(d.value for d in at.dataframe if "re-ranked top 3" in d.value.columns)
    assert len(per_query) == len(demo_queries())
    pizza = per_query.set_index("message id").loc["demo-q01"]
    assert pizza["re-ranked top 3"] == "(nothing returned)"

    # One read per demo query, logged without text.
    reads = [json.loads(line) for line in (data_dir / "reads.jsonl").read_text().splitlines()]
    assert len(reads) == len(demo_queries())
    assert {r["source"] for r in reads} == {"quality"}
    assert "pizza" not in (data_dir / "reads.jsonl").read_text()


def test_moving_the_controls_recomputes_without_reading_again(app, data_dir):
    at = quality_page(app)
    reads_before = len((data_dir / "reads.jsonl").read_text().splitlines())
    [default_figure] = metric_values(at, "Top-3 precision, re-ranked")
    at.slider(key="quality_threshold").set_value(0.0).run()
    at.slider(key="quality_relevance_weight").set_value(1.0).run()
    [store_figure] = metric_values(at, "Top-3 precision, store order")
    [unfiltered] = metric_values(at, "Top-3 precision, re-ranked")
    # No threshold and relevance only: the same memories come back as from the store.
    assert unfiltered == store_figure != default_figure
    at.number_input(key="quality_cutoff").set_value(1).run()
    assert metric_values(at, "Top-1 precision, store order")
    assert len((data_dir / "reads.jsonl").read_text().splitlines()) == reads_before
    # The read log is offered for download.
    assert any(b.label == "Download read log (JSONL)" for b in at.download_button)
    assert not at.exception


def test_a_labelled_session_is_measured_from_its_labels(app, data_dir):
    db = AppDatabase(data_dir / "labels.sqlite")
    # The store put an off-topic memory first; two relevant ones follow.
    for memory_id, rank, score, label in (
        ("off", 1, 0.20, "not_relevant"),
        ("good", 2, 0.60, "relevant"),
        ("fine", 3, 0.50, "relevant"),
    ):
        db.labels.save(
            message_id="msg-1", memory_id=memory_id, label=label, reviewer="ana", store="embedded:feedbeef",
            rank=rank, score=score,
        )
    db.close()
    at = quality_page(app)
    assert at.selectbox(key="quality_label_store").value == "embedded:feedbeef"
    # demo figures first, then the labelled session's
    assert metric_values(at, "Top-3 precision, store order")[1] == "0.667"
    assert metric_values(at, "Top-3 precision, re-ranked")[1] == "1.000"  # "off" is under the threshold
    assert any("ages are unknown" in c.value for c in at.caption)
    per_message = next(
        d.value for d in at.dataframe if "re-ranked top 3" in d.value.columns and "query" not in d.value.columns
    )
    assert list(per_message["message id"]) == ["msg-1"]
    assert per_message["re-ranked top 3"].iloc[0] == "good, fine"


def test_stale_but_convincing_lists_old_strong_matches(app):
    at = quality_page(app)
    at.number_input(key="quality_demo_stale_age_days").set_value(100.0).run()
    at.slider(key="quality_demo_stale_min_relevance").set_value(0.4).run()
    table = next(d.value for d in at.dataframe if "age (days)" in d.value.columns)
    assert (table["age (days)"] > 100).all() and (table["relevance"] >= 0.4).all()
    assert len(table) > 0
    assert math.isfinite(table["relevance"].max())


def test_labels_made_on_the_inspect_page_are_measured_with_ages_from_the_store(app):
    at = app(query="Which UI theme does the user prefer?", label_reviewer="ana")
    at.run()
    at.button(key="relevant_sam-02").click().run()
    hits = next(d.value for d in at.dataframe if "semantic" in d.value.columns)
    others = [m for m in hits["memory id"] if m != "sam-02"]
    for memory_id in others:
        at.button(key=f"not_relevant_{memory_id}").click().run()
    at.switch_page("quality.py").run()
    at.button(key="quality_run_demo").click().run()
    assert not at.exception, at.exception
    assert any("Ages come from the open store." in c.value for c in at.caption)
    per_message = next(
        d.value for d in at.dataframe if "re-ranked top 3" in d.value.columns and "query" not in d.value.columns
    )
    [row] = per_message.to_dict("records")
    assert row["message id"].startswith("live-")
    assert row["relevant"] == "sam-02"
    # Relevance is the labelled score here; the theme memory leads both orders.
    assert row["store top 3"].startswith("sam-02") and row["re-ranked top 3"].startswith("sam-02")
    assert metric_values(at, "Top-3 precision, store order")[1] == f"{1 / 3:.3f}"


@pytest.fixture
def team_store(tmp_path, monkeypatch):
    """An embedded store file of a team's own, holding users the demo set does not ask about."""
    from connectors.embedded.store import EmbeddedStore

    path = tmp_path / "team.sqlite"
    memories = tmp_path / "team.jsonl"
    memories.write_text(
        "\n".join(
            json.dumps({"id": f"t-{i}", "user_id": user, "text": text, "age_days": 3})
            for i, (user, text) in enumerate(
                [("mel", "Signed up for a pottery class"), ("mel", "Has two cats"), ("caro", "Runs on Sundays")]
            )
        )
        + "\n"
    )
    store = EmbeddedStore(path)
    store.import_jsonl(memories)
    store.close()
    monkeypatch.setenv("MEMLENS_EMBEDDED_DB", str(path))
    return path


def test_opening_quality_sends_nothing_and_names_the_users_a_store_does_not_hold(app, data_dir, team_store):
    at = quality_page(app, run_demo=False)
    # Nothing was asked of the store: no read is logged, no figure is shown.
    assert not (data_dir / "reads.jsonl").exists()
    assert not metric_values(at, "Top-3 precision, store order")
    assert not any("sent no scores" in c.value for c in at.caption)
    assert any(b.key == "quality_run_demo" for b in at.button)
    # Before any click, the page says the demo users are not in this store (above
    # the judged set's Start run button, and above the demo queries' button).
    users = sorted({q["user_id"] for q in demo_queries()})
    warnings = [w.value for w in at.warning if "these questions are asked for" in w.value]
    assert len(warnings) == 2 and warnings[0] == warnings[1]
    warning = warnings[0]
    assert f"holds none of the {len(users)} user(s)" in warning and ", ".join(users) in warning
    assert "it holds 2 other user(s)" in warning

    # Asked anyway, it says what happened: nothing came back, not "no scores".
    at.button(key="quality_run_demo").click().run()
    assert not at.exception, at.exception
    assert any("returned no memories for any demo query" in c.value for c in at.caption)
    assert not any("sent no scores" in c.value for c in at.caption)
