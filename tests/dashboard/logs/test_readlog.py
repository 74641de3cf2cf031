"""The read log: one JSON line per store query, ids and numbers only, written for
failures too, and never able to break the read itself."""

from __future__ import annotations

import json

import pytest

from connectors.base import StoreTimeout
from dashboard.logs import read_log as readlog

QUERY = "Where does the user live?"


def test_a_real_query_is_logged_with_ids_scores_and_no_text(demo_store, tmp_path):
    log = tmp_path / "reads.jsonl"
    result = readlog.logged_query(
        demo_store, QUERY, user_id="sam", k=5, store_fingerprint="embedded:abcd1234", source="inspect", log_path=log
    )
    [line] = log.read_text().splitlines()
    record = json.loads(line)
    assert set(record) == {
        "at", "source", "store", "query_hash", "user_hash", "k", "candidate_count", "top_k", "latency_ms", "error",
    }
    assert record["store"] == "embedded:abcd1234" and record["source"] == "inspect"
    assert record["candidate_count"] == len(result.hits) == 5
    assert [r["memory_id"] for r in record["top_k"]] == [h.memory_id for h in result.hits]
    assert [r["score"] for r in record["top_k"]] == [h.score for h in result.hits]
    assert record["query_hash"] == readlog.text_hash(QUERY) and len(record["query_hash"]) == 16
    assert record["user_hash"] == readlog.text_hash("sam")
    assert record["latency_ms"] > 0 and record["error"] is None
    # No query, user or memory text anywhere in the file.
    text = log.read_text()
    for private in ("Where does", "sam\"", "Lisbon", *[h.text for h in result.hits]):
        assert private not in text


def test_the_same_query_modulo_whitespace_hashes_the_same():
    assert readlog.text_hash("Where  does the user\nlive?") == readlog.text_hash(QUERY)
    assert readlog.text_hash("Where does the user work?") != readlog.text_hash(QUERY)


class FailingStore:
    name = "failing"

    def query(self, text, *, user_id, k):
        raise StoreTimeout("no answer within 5 s", request_id="req-1")


def test_a_failed_read_is_logged_and_the_error_still_raised(tmp_path):
    log = tmp_path / "reads.jsonl"
    with pytest.raises(StoreTimeout):
        # A stand-in with only the query() that logged_query calls, not a whole MemoryStore.
        readlog.logged_query(
            FailingStore(),  # type: ignore[arg-type]
            QUERY, user_id=None, k=5, store_fingerprint="failing:0", source="quality", log_path=log,
        )
    record = json.loads(log.read_text())
    assert record["error"] == "StoreTimeout"
    assert record["candidate_count"] == 0 and record["top_k"] == []
    assert record["user_hash"] is None


def test_an_unwritable_log_never_breaks_the_read(demo_store, tmp_path):
    blocked = tmp_path / "reads.jsonl"
    blocked.mkdir()  # a directory where the file should be
    result = readlog.logged_query(
        demo_store, QUERY, user_id="sam", k=3, store_fingerprint="embedded:x", source="inspect", log_path=blocked
    )
    assert len(result.hits) == 3
    assert any("not written to the read log" in note for note in result.notes)


def test_reads_append_and_broken_lines_are_counted_not_fatal(demo_store, tmp_path):
    log = tmp_path / "reads.jsonl"
    for k in (1, 2):
        readlog.logged_query(demo_store, QUERY, user_id="sam", k=k, store_fingerprint="e:1", source="inspect", log_path=log)
    with log.open("a") as handle:
        handle.write("{half a line\n[1, 2]\n")
    records, broken = readlog.read_records(log)
    assert [r["k"] for r in records] == [1, 2] and broken == 2
    assert readlog.log_bytes(log) == log.read_bytes()
    assert readlog.read_records(tmp_path / "missing.jsonl") == ([], 0)
    assert readlog.log_bytes(tmp_path / "missing.jsonl") == b""


def test_the_log_lives_in_the_data_dir(data_dir):
    assert readlog.read_log_path() == data_dir / "reads.jsonl"


def test_a_logged_store_logs_the_rank_lookup_and_passes_everything_else_through(demo_store, tmp_path):
    from dashboard.ranking.rank_lookup import DEFAULT_LOOKUP_K, find_rank

    log = tmp_path / "reads.jsonl"
    wrapped = readlog.LoggedStore(demo_store, store_fingerprint="embedded:1", source="rank_lookup", log_path=log)
    assert wrapped.get("sam-01").text == demo_store.get("sam-01").text
    assert wrapped.name == demo_store.name
    lookup = find_rank(wrapped, QUERY, "sam-01", user_id="sam")
    assert lookup.found
    [record] = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["source"] == "rank_lookup" and record["k"] == DEFAULT_LOOKUP_K
    assert record["candidate_count"] == lookup.returned
