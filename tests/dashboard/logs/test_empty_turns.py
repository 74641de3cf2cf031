"""A turn the store returned nothing for is one row with a message_id and no memory_id,
rank or score; every log reader counts it as a turn with no memory (docs/monitoring.md)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dashboard.logs import otlp
from dashboard.logs.read_log import append_record, read_record, read_records
from dashboard.logs.retrieval_log import read_log, read_log_bytes

ROWS: list[dict[str, Any]] = [
    {"message_id": "m1", "memory_id": "a", "rank": 1, "score": 0.61, "timestamp": "2026-01-05T09:00:00Z"},
    {"message_id": "m1", "memory_id": "b", "rank": 2, "score": 0.40, "timestamp": "2026-01-05T09:00:00Z"},
    {"message_id": "m2", "timestamp": "2026-01-05T09:01:00Z", "user_id": "sam"},  # nothing came back
    {"message_id": "m3", "memory_id": "c", "rank": 1, "score": 0.2, "timestamp": "2026-01-05T09:02:00Z"},
]


def check(log, *, line=3):
    assert not log.issues
    assert log.rows["message_id"].tolist() == ["m1", "m1", "m3"]
    assert log.empty_turns["message_id"].tolist() == ["m2"]
    assert log.empty_turns["line"].tolist() == [line]
    assert log.turns == 3
    assert log.summary().endswith("; 1 turn(s) with no memory")


def test_jsonl_an_absent_or_null_memory_id_is_an_empty_turn():
    data = "".join(json.dumps(row) + "\n" for row in ROWS).encode()
    check(read_log_bytes(data, "log.jsonl"))
    nulls = data.replace(b'{"message_id": "m2"', b'{"memory_id": null, "rank": null, "score": null, "message_id": "m2"')
    log = read_log_bytes(nulls, "log.jsonl")
    check(log)
    assert log.empty_turns["user_id"].tolist() == ["sam"]
    assert str(log.empty_turns["timestamp"][0]) == "2026-01-05 09:01:00+00:00"


def test_csv_empty_cells_are_an_empty_turn():
    text = "message_id,memory_id,rank,score,timestamp\n" + "".join(
        f"{r['message_id']},{r.get('memory_id', '')},{r.get('rank', '')},{r.get('score', '')},{r['timestamp']}\n" for r in ROWS
    )
    check(read_log_bytes(text.encode(), "log.csv"), line=4)  # the header is record 1


def test_parquet_nulls_are_an_empty_turn(tmp_path):
    table = pa.Table.from_pylist([{**{"memory_id": None, "rank": None, "score": None}, **r} for r in ROWS])
    path = tmp_path / "log.parquet"
    pq.write_table(table, path)
    check(read_log(path))


def test_otlp_a_retriever_span_with_no_documents_is_an_empty_turn_and_a_failed_one_no_turn():
    def span(span_id, documents, status=None):
        attributes = [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}}]
        for index, (memory_id, score) in enumerate(documents):
            attributes.append({"key": f"retrieval.documents.{index}.document.id", "value": {"stringValue": memory_id}})
            attributes.append({"key": f"retrieval.documents.{index}.document.score", "value": {"doubleValue": score}})
        return {"spanId": span_id, "startTimeUnixNano": "1767603600000000000", "attributes": attributes, "status": status or {}}

    request = {"resourceSpans": [{"scopeSpans": [{"spans": [
        span("00000000000000a1", [("a", 0.6), ("b", 0.4)]),
        span("00000000000000a2", []),
        span("00000000000000a3", [], {"code": 2, "message": "StoreTimeout"}),
    ]}]}]}
    log = read_log_bytes(json.dumps(request).encode() + b"\n", "traces.json")
    assert not log.issues and log.bad_rows == 0
    assert log.rows["message_id"].tolist() == ["00000000000000a1"] * 2
    assert log.empty_turns["message_id"].tolist() == ["00000000000000a2"]
    assert log.turns == 2


def test_the_read_log_a_read_with_candidate_count_0_is_an_empty_turn(tmp_path):
    from connectors.base import Hit, QueryResult

    path = tmp_path / "reads.jsonl"
    hits = [Hit(memory_id="a", rank=1, text="", score=0.5), Hit(memory_id="b", rank=2, text="", score=0.3)]

    def record(query, result, error=None):
        return read_record(query=query, user_id="sam", k=5, store="embedded:demo", source="inspect", latency_ms=3.0,
                           result=result, error=error)

    append_record(path, record("where do I live", QueryResult(query="q", hits=hits)))
    append_record(path, record("pizza topping", QueryResult(query="q", hits=[])))
    append_record(path, record("boom", None, TimeoutError("slow")))
    log = read_log(path)
    assert not log.issues
    assert log.rows["memory_id"].tolist() == ["a", "b"] and log.rows["rank"].tolist() == [1, 2]
    assert len(log.empty_turns) == 1 and log.empty_turns["line"].tolist() == [2]
    assert log.turns == 2  # the failed read is not a turn with no memory: the store did not answer
    # the same turns as the read log exported to OTLP and read back
    records, _ = read_records(path)
    exported = read_log_bytes(otlp.to_otlp_jsonl(records), "reads-otlp.json")
    assert exported.rows["message_id"].tolist() == log.rows["message_id"].tolist()
    assert exported.empty_turns["message_id"].tolist() == log.empty_turns["message_id"].tolist()


def test_a_row_with_no_memory_id_but_a_score_is_still_a_bad_row():
    data = b'{"message_id": "m1", "score": 0.5}\n{"message_id": "m2", "memory_id": "", "rank": 1, "score": 0.2}\n'
    log = read_log_bytes(data, "log.jsonl")
    assert [(i.line, i.field) for i in log.issues] == [(1, "memory_id"), (1, "rank"), (2, "memory_id")]
    assert log.turns == 0 and log.bad_rows == 2


def test_an_empty_turn_row_for_a_turn_that_has_memories_is_merged_and_reported():
    data = "".join(json.dumps(r) + "\n" for r in [*ROWS, {"message_id": "m1"}, {"message_id": "m2"}]).encode()
    log = read_log_bytes(data, "log.jsonl")
    assert log.empty_turns["message_id"].tolist() == ["m2"] and log.duplicates == 2
    assert [str(c) for c in log.conflicts] == [
        "log.jsonl: line 5, field 'memory_id': says turn m1 had no memory, but line 1 gives it one; the memories are kept"
    ]


