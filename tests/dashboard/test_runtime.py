"""The agent-side API (dashboard/runtime.py) on the real embedded demo store: the floor
config Calibrate exports, the block and the reason, floors per segment, refusal across
score spaces, and the log an agent writes, read back by `memlens logs check` and
`memlens monitor`."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta

import pytest
from demo_questions import PIZZA, THEME

from connectors.common.score_spaces import AS_SENT, ScoreSpace, space_for
from dashboard.calibration.label_files import parse_label_text
from dashboard.calibration.report import floor_choice, labels_score_space
from dashboard.calibration.sweep import calibrate
from dashboard.cli.main import main
from dashboard.demo import DEMO_LABELS
from dashboard.floor import NO_MEMORY_TEXT
from dashboard.runtime import (
    FloorConfig,
    FloorConfigError,
    RetrievalLog,
    RetrievalLogError,
    RetrievalSpans,
    ScoreSpaceMismatch,
    memory_for_prompt,
    memory_from_hits,
)

HEAVY = ("streamlit", "pandas", "duckdb", "plotly", "torch")


def test_importing_the_api_loads_nothing_heavy():
    code = (
        "import sys; import dashboard.runtime; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------ the floor config


@pytest.fixture(scope="module")
def demo_export(tmp_path_factory):
    """The floor JSON Calibrate exports for the bundled demo labels (embedded store)."""
    labels = parse_label_text(DEMO_LABELS.read_text(encoding="utf-8"), source=DEMO_LABELS.name)
    choice = floor_choice(calibrate(labels.labelled_scores(), resamples=0), labels, score_space=labels_score_space(labels.stores()))
    path = tmp_path_factory.mktemp("floor") / "memlens-floor.json"
    path.write_text(json.dumps(choice), encoding="utf-8")
    return path, choice


def test_calibrates_export_names_its_score_space_and_loads(demo_export):
    path, choice = demo_export
    assert choice["score_space"] == {"store": "embedded", "formula": AS_SENT, "setting": None}
    config = FloorConfig.load(path)
    assert config.floor == choice["floor"]
    assert config.score_space == ScoreSpace("embedded", AS_SENT)
    assert config.notes == []


def test_an_old_file_without_a_space_is_read_and_says_the_space_is_unknown(tmp_path, demo_store):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"floor": 0.35, "snippet": "MEMORY_SCORE_FLOOR=0.35"}), encoding="utf-8")
    config = FloorConfig.load(path)
    assert config.score_space is None
    assert "score space is unknown" in config.notes[0]
    turn = memory_for_prompt(demo_store, PIZZA, user_id="sam", floor=config)
    assert "score space is unknown" in turn.notes[0]


def test_a_floor_config_made_in_code_is_checked_too():
    with pytest.raises(FloorConfigError, match="field 'segments.user.sam'"):
        FloorConfig(floor=0.35, segments={"user": {"sam": float("nan")}})
    with pytest.raises(FloorConfigError, match="field 'floor'"):
        FloorConfig(floor=float("inf"))


@pytest.mark.parametrize(
    "content,field",
    [
        ("[1, 2]", "not a floor config"),
        ('{"floor": "0.35"}', "field 'floor'"),
        ('{"floor": 0.35, "score_space": {"store": "chroma", "formula": "d*2"}}', "field 'score_space.formula'"),
        ('{"floor": 0.35, "segments": {"user": {"sam": "high"}}}', "field 'segments.user.sam'"),
        ('{"floor": 0.35, "segments": {"country": {"pt": 0.3}}}', "field 'segments.country'"),
        ("{not json", "not valid JSON"),  # the inbound boundary's words (it names the line and column)
    ],
)
def test_a_bad_floor_config_names_the_file_and_the_field(tmp_path, content, field):
    path = tmp_path / "floor.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(FloorConfigError) as caught:
        FloorConfig.load(path)
    assert str(path) in str(caught.value) and field in str(caught.value)


# ------------------------------------------------------------------ one turn


def test_pizza_question_gets_the_no_memory_block_and_says_why(demo_store):
    turn = memory_for_prompt(demo_store, PIZZA, user_id="sam", k=5, floor=FloorConfig(floor=0.35))
    assert turn.kept == [] and len(turn.dropped) == 5
    assert turn.block == NO_MEMORY_TEXT
    assert turn.reason == "all 5 under the floor 0.35"


def test_theme_question_keeps_only_what_passes_and_builds_the_block_from_it(demo_store):
    turn = memory_for_prompt(demo_store, THEME, user_id="sam", k=5, floor=0.35)
    assert turn.reason is None
    assert [hit.memory_id for hit in turn.kept] == ["sam-02"]  # the theme memory
    assert turn.dropped and turn.source == "kept_memories"
    assert "Prefers light UI theme" in turn.block
    assert all(hit.text not in turn.block for hit in turn.dropped)


def test_nothing_dropped_uses_the_stores_own_context(demo_store):
    turn = memory_for_prompt(demo_store, THEME, user_id="sam", k=3, floor=0.0)
    result = demo_store.query(THEME, user_id="sam", k=3)
    assert turn.dropped == [] and turn.source == "store_context"
    assert turn.block == result.context


def test_a_users_own_floor_applies_and_the_global_one_is_the_fallback(demo_store):
    config = FloorConfig(floor=0.35, segments={"user": {"sam": 0.28}})
    sam = memory_for_prompt(demo_store, PIZZA, user_id="sam", floor=config)
    assert (sam.floor, sam.segment) == (0.28, "user=sam")
    assert [hit.memory_id for hit in sam.kept] == ["sam-02"]  # the theme memory at about 0.29
    other = config.floor_for(user_id="ana")
    assert other == (0.35, "global")
    assert config.floor_for(user_id="ana", store="embedded") == (0.35, "global")
    assert FloorConfig(floor=0.35, segments={"store": {"embedded": 0.2}}).floor_for(user_id="ana", store="embedded") == (
        0.2,
        "store=embedded",
    )


def test_a_floor_from_another_score_space_is_refused(demo_store):
    chroma_floor = FloorConfig(floor=0.4, score_space=space_for("chroma", "l2"), source="memlens-floor.json")
    with pytest.raises(ScoreSpaceMismatch) as caught:
        memory_for_prompt(demo_store, PIZZA, user_id="sam", floor=chroma_floor)
    message = str(caught.value)
    assert "chroma (l2): score = 1 - d/2" in message and "embedded: the store's score as sent" in message
    with pytest.raises(ScoreSpaceMismatch):
        memory_from_hits([("m1", "text", 0.3)], store_kind="pgvector", setting="<->", floor=chroma_floor)
    with pytest.raises(ScoreSpaceMismatch):
        memory_from_hits([("m1", "text", 0.3)], store_kind="chroma", setting="cosine", floor=chroma_floor)


def test_raw_distances_are_converted_by_the_connectors_rule():
    # squared l2 distances 0.8 and 1.4 are scores 0.6 and 0.3: only the first passes 0.5
    floor = FloorConfig(floor=0.5, score_space=space_for("chroma", "l2"))
    turn = memory_from_hits(
        [{"id": "near", "text": "Lives in Lisbon", "score": 0.8}, {"id": "far", "text": "Runs", "score": 1.4}],
        store_kind="chroma",
        setting="l2",
        floor=floor,
    )
    assert [(h.memory_id, h.score, h.raw_score) for h in turn.kept] == [("near", pytest.approx(0.6), 0.8)]
    assert [h.memory_id for h in turn.dropped] == ["far"]
    assert turn.block == "Relevant memories about the user:\n- Lives in Lisbon"


def test_no_hits_says_nothing_returned():
    turn = memory_from_hits([], store_kind="embedded", floor=0.35)
    assert turn.reason == "nothing returned" and turn.block == NO_MEMORY_TEXT


# ------------------------------------------------------------------ the log


def _agent_turns(store, log, days: int = 6, per_day: int = 30) -> int:
    """Turns spread over `days` days from four threads; returns the rows written.
    The timestamps are set so the monitor has days to window."""
    questions = [THEME, PIZZA, "Where does the user live?", "What is the user's job?"]
    start = datetime(2026, 1, 1, 9, tzinfo=UTC)
    results = [store.query(q, user_id="sam", k=5) for q in questions]
    rows = [0] * 4

    def agent(worker: int) -> None:
        for day in range(days):
            for n in range(worker, per_day, 4):
                hits = results[n % 4].hits if n % 5 else []  # every fifth turn got nothing back
                stamp = start + timedelta(days=day, minutes=n)
                rows[worker] += log.write_turn(f"d{day}-t{n}", hits, user_id="sam", store="embedded", timestamp=stamp)

    threads = [threading.Thread(target=agent, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(rows)


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_the_agents_log_is_read_back_by_logs_check_and_monitor(tmp_path, demo_store, capsys, suffix):
    path = tmp_path / f"retrievals.{suffix}"
    with RetrievalLog(path, flush_every=7) as log:
        rows = _agent_turns(demo_store, log)
    assert log.rows_written == rows
    turns, empty = 6 * 30, 6 * 6
    assert rows == (turns - empty) * 5 + empty

    assert main(["logs", "check", str(path)]) == 0
    summary = capsys.readouterr().out.splitlines()[0]
    assert f"imported {(turns - empty) * 5:,} rows in {turns:,} turns from {rows:,} read; 0 bad row(s)" in summary
    assert summary.endswith(f"{empty} turn(s) with no memory")

    assert main(["monitor", str(path), "--floor", "0.35", "--baseline-windows", "2", "--min-turns", "10", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [w["turns"] for w in report["windows"]] == [30] * 6
    assert sum(w["rows"] for w in report["windows"]) == (turns - empty) * 5  # memories returned
    assert report["counts"]["empty_turns"] == empty and report["counts"]["rows"] + empty == rows
    # pizza and every fifth turn leave no memory at 0.35: the same share each day
    assert {w["no_memory_share"] for w in report["windows"]} == {report["windows"][0]["no_memory_share"]}


def test_memory_for_prompt_logs_ids_and_scores_only(tmp_path, demo_store):
    path = tmp_path / "retrievals.jsonl"
    with RetrievalLog(path) as log:
        memory_for_prompt(demo_store, PIZZA, user_id="sam", floor=0.35, log=log, message_id="m1")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [r["rank"] for r in rows] == [1, 2, 3, 4, 5]
    assert {r["message_id"] for r in rows} == {"m1"} and {r["store"] for r in rows} == {"embedded"}
    assert "query" not in rows[0] and PIZZA not in path.read_text(encoding="utf-8")
    with RetrievalLog(tmp_path / "with-query.jsonl", include_query=True) as log:
        memory_for_prompt(demo_store, PIZZA, user_id="sam", floor=0.35, log=log)
    assert json.loads((tmp_path / "with-query.jsonl").read_text(encoding="utf-8").splitlines()[0])["query"] == PIZZA


def test_a_parquet_log_is_never_overwritten_and_other_suffixes_are_refused(tmp_path):
    existing = tmp_path / "day.parquet"
    existing.write_bytes(b"PAR1")
    with pytest.raises(RetrievalLogError, match="cannot be appended"):
        RetrievalLog(existing)
    assert existing.read_bytes() == b"PAR1"
    with pytest.raises(RetrievalLogError, match=r"\.jsonl or \.parquet"):
        RetrievalLog(tmp_path / "log.txt")


def test_the_opentelemetry_variant_is_read_back_as_turns(tmp_path, demo_store, capsys):
    from tests.dashboard.logs.test_otlp import collector_json_lines, tracer_and_exporter

    tracer, exporter = tracer_and_exporter()
    spans = RetrievalSpans(tracer)
    turns = [memory_for_prompt(demo_store, q, user_id="sam", k=5, floor=0.35, log=spans) for q in (THEME, PIZZA)]
    memory_from_hits([], store_kind="embedded", floor=0.35, log=spans, user_id="sam")  # a turn that got nothing
    path = tmp_path / "traces.json"
    path.write_bytes(collector_json_lines(exporter.get_finished_spans()))
    assert main(["logs", "check", str(path)]) == 0
    summary = capsys.readouterr().out.splitlines()[0]
    assert "imported 10 rows in 3 turns from 11 read; 0 bad row(s)" in summary and summary.endswith("1 turn(s) with no memory")
    from dashboard.logs.retrieval_log import read_log

    rows = read_log(path).rows
    first = rows[rows["rank"] == 1].sort_values("score", ascending=False).iloc[0]
    assert (first["memory_id"], first["score"]) == (turns[0].kept[0].memory_id, pytest.approx(turns[0].kept[0].score))
    assert PIZZA not in path.read_text(encoding="utf-8")  # no query text unless asked
    # the floor each turn was filtered at comes back with its rows, as from a file log
    assert set(rows["floor"]) == {0.35} and set(rows["floor_segment"]) == {"global"}
    empty = read_log(path).empty_turns
    assert list(empty["floor"]) == [0.35] and list(empty["floor_segment"]) == ["global"]


def test_feedback_after_the_reply_is_sent_only_when_asked(tmp_path, demo_store, demo_dir):
    import shutil

    from connectors.embedded.store import EmbeddedStore
    from dashboard.runtime import send_feedback

    shutil.copy(demo_dir / "demo.sqlite", tmp_path / "copy.sqlite")  # feedback writes: not the shared demo store
    store = EmbeddedStore(tmp_path / "copy.sqlite")
    try:
        before = {m.memory_id: m.importance for m in store.list(user_id="sam", limit=100)}
        turn = memory_for_prompt(store, THEME, user_id="sam", k=5, floor=0.35)
        assert {m.memory_id: m.importance for m in store.list(user_id="sam", limit=100)} == before  # nothing sent yet
        outcomes = send_feedback(store, turn)
        signals = {o.item.memory_id: o.item.signal for o in outcomes}
        assert signals == {**{h.memory_id: "retrieved" for h in turn.kept}, **{h.memory_id: "ignored" for h in turn.dropped}}
        after = {m.memory_id: m.importance for m in store.list(user_id="sam", limit=100)}
        assert all(after[h.memory_id] > before[h.memory_id] for h in turn.kept)
        assert all(after[h.memory_id] < before[h.memory_id] for h in turn.dropped)
    finally:
        store.close()
