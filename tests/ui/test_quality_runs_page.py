"""The Quality page on runs, in AppTest: upload a judged set (a bad line named, the
rest kept), run it on the demo store, see its figures, run it again with a weighting
that over-rewards recency, compare the two (the losses link to Inspect), and search
the weights back."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

DEMO_QUERIES = Path(__file__).resolve().parents[2] / "demo_data" / "queries.jsonl"
UPLOAD = DEMO_QUERIES.read_bytes() + b'{"message_id": "broken", "query": 5}\n'


def quality_page(app):
    at = app()
    at.run()
    at.switch_page("quality.py").run()
    assert not at.exception, at.exception
    return at


def metric(at, label):
    return next(m for m in at.metric if m.label == label)


def test_upload_run_compare_and_search_weights(app, data_dir):
    at = quality_page(app)
    at.file_uploader(key="eval_upload").set_value(("team.jsonl", UPLOAD, "application/jsonl")).run()
    at.text_input(key="eval_upload_name").set_value("team").run()
    at.button(key="eval_keep_upload").click().run()
    assert not at.exception, at.exception
    assert any("Kept judged set **team**: 38 questions; 1 line(s) left out" in s.value for s in at.success)
    # the file's own text is shown inert (escaped Markdown)
    assert any("team.jsonl: line 39, field 'query'" in w.value.replace("\\", "") for w in at.warning)
    assert at.selectbox(key="eval_set").value == "team"

    at.number_input(key="eval_k").set_value(5).run()
    at.text_input(key="eval_run_name").set_value("default weights").run()
    at.button(key="eval_start").click().run()
    assert not at.exception, at.exception
    assert any("Run **default weights** complete: 38 questions" in s.value for s in at.success)
    assert float(metric(at, "recall@5").value) > 0.9  # the demo store finds the demo answers

    # The same set on the store re-weighted to favour fresh memories.
    at.session_state["cfg_embedded_weights"] = "semantic=0.05,recency=0.95,importance=0,usage=0"
    at.run()
    at.text_input(key="eval_run_name").set_value("recency heavy").run()
    at.button(key="eval_start").click().run()
    assert not at.exception, at.exception
    runs = next(d.value for d in at.dataframe if "status" in d.value.columns)
    assert list(runs["status"]) == ["complete", "complete"]

    at.selectbox(key="eval_compare_metric").set_value("mrr").run()
    assert at.selectbox(key="eval_run_b").value == at.session_state["eval_run"]  # the newest run is B
    losses = int(metric(at, "B wins / ties / losses").value.split(" / ")[2])
    assert losses > 0 and float(metric(at, "p-value").value) < 0.05
    worst = next(d.value for d in at.dataframe if "inspect" in d.value.columns)
    link = urlsplit(worst["inspect"].iloc[0])
    params = parse_qs(link.query)
    # Run B's store and settings come along (the embedded store, its weights), so
    # Inspect ranks the question as run B did.
    assert link.path == "/inspect" and set(params) == {"query", "user", "k", "floor", "store", "weights"}
    assert params["store"] == ["embedded"] and params["weights"] == ["semantic=0.05,recency=0.95,importance=0,usage=0"]
    assert params["k"] == ["5"]

    # What-if on the recency-heavy run: semantic weight comes back, on held-out questions too.
    at.selectbox(key="whatif_metric").set_value("mrr").run()
    at.button(key="whatif_search").click().run()
    assert not at.exception, at.exception
    assert any("of the gain found on the search split held on the held-out questions" in i.value for i in at.info)
    table = next(d.value for d in at.dataframe if "held out" in d.value.columns)
    assert table["semantic"].iloc[1] > table["semantic"].iloc[0]  # best vs the store's own
    at.button(key="whatif_apply").click().run()
    assert not at.exception, at.exception
    assert at.session_state["cfg_embedded_weights"].startswith("importance=")

    # The Calibrate page takes the run's judged hits as its labels.
    run_id = at.session_state["eval_run"]
    at.switch_page("calibrate.py").run()
    at.radio(key="calibrate_source").set_value("A saved run").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="calibrate_run").value == run_id
    # 38 questions, five scored hits each, every hit judged by the set.
    assert metric(at, "Labelled hits").value == "190" and metric(at, "Turns").value == "38"


def test_labelled_turns_are_promoted_to_a_judged_set(app, data_dir):
    from dashboard.database import AppDatabase

    db = AppDatabase(data_dir / "labels.sqlite")
    # Two turns whose query text the reviewer chose to keep, one without it.
    for message_id, memory_id, value, text in (
        ("turn-1", "sam-01", "relevant", "Where does the user live?"),
        ("turn-1", "sam-02", "not_relevant", "Where does the user live?"),
        ("turn-2", "sam-02", "relevant", "Which UI theme does the user prefer?"),
        ("turn-3", "sam-03", "relevant", None),
    ):
        db.labels.save(message_id=message_id, memory_id=memory_id, label=value, reviewer="ana",
                      store="embedded:x", rank=1, score=0.5, query_text=text)
    db.close()
    at = quality_page(app)
    at.text_input(key="eval_promote_name").set_value("week 48").run()
    at.button(key="eval_promote").click().run()
    assert not at.exception, at.exception
    assert any("Kept judged set **week 48**: 2 questions; 1 turn(s) left out" in s.value for s in at.success)
    assert at.selectbox(key="eval_set").value == "week 48"
    assert any("2 questions (2 answerable)" in c.value for c in at.caption)


def test_a_run_with_failed_questions_says_how_many_and_why(app, data_dir):
    from dashboard.database import AppDatabase
    from dashboard.database.model import utc_now
    from dashboard.database.runs import QueryOutcome, RunHit, RunInfo, new_run_id
    from dashboard.evaluation.judged_sets import demo_set

    db = AppDatabase(data_dir / "labels.sqlite")
    judged = demo_set()
    digest = db.judged_sets.save(judged)
    run_id = new_run_id()
    db.runs.start(RunInfo(run_id, "flaky store", judged.name, digest, "embedded", "embedded:x", {}, 5, utc_now(),
                            None, len(judged.questions)))
    outcomes = []
    for position, question in enumerate(judged.questions):
        error = ("StoreTimeout: no answer in 10 s" if position < 3 else "AuthFailed: the store refused the key"
                 if position < 5 else None)
        hits = [] if error else [RunHit(next(iter(question.grades), "sam-01"), 1, 0.5)]
        outcomes.append(QueryOutcome(question.message_id, position, question.user_id, hits, 1.0, error))
    db.runs.save_outcomes(run_id, outcomes)
    db.runs.finish(run_id)
    db.close()
    at = quality_page(app)
    total = len(judged.questions)
    [table] = [d.value for d in at.dataframe if "failed" in d.value.columns]  # the runs table
    assert table.loc[0, "failed"] == 5
    assert table.loc[0, "status"] == f"incomplete ({total - 5} of {total}; 5 failed)"
    warnings = [w.value.replace("\\", "") for w in at.warning]
    assert any(f"5 of {total} questions failed (StoreTimeout 3, AuthFailed 2)" in w for w in warnings), warnings
